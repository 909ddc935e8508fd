//! Voices by name: found on the search path ([`dv_voice::catalog`]), loaded
//! on first use (golden checks included, or their passing verdict taken from
//! [`dv_speak::SpeakerOptions::parity_cache`] when this build checked the
//! same package before) and kept, the least recently used dropped past a
//! capacity. Each load prints a line naming the voice and whether its
//! golden checks ran. With slots ([`SlotConfig`]) each loaded voice
//! also gets its slot scheduler (on the GPU: kernel 2 compiled for the
//! voice and checked against the CPU reference first).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use dv_speak::{Device, Ramp, Speaker, SpeakerOptions};
use dv_synth::{ConditioningNetwork, Sampling};
use dv_voice::catalog;
use tokio::sync::OnceCell;

use dv_slots::{CpuSlots, CudaSlots, Scheduler, SlotEngine};

use crate::config::{SlotBackend, SlotConfig};
use crate::error::ApiError;
use crate::metrics::Metrics;

/// A loaded voice: its speaker, and its slot scheduler when the server
/// renders on slots.
pub(crate) struct Loaded {
    pub(crate) speaker: Arc<Speaker>,
    pub(crate) slots: Option<Arc<SlotEngine>>,
}

/// A voice in the cache: loaded once (the cell), and when it was last
/// asked for (the cache's clock), for dropping the least recently used.
struct CacheEntry {
    speaker: Arc<OnceCell<Arc<Loaded>>>,
    used: u64,
}

/// Why a voice did not load.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    #[error(transparent)]
    Speaker(#[from] dv_speak::SpeakError),
    #[error("the speaker has no CPU sampler")]
    NoCpuSampler,
    #[error(transparent)]
    Slots(#[from] dv_slots::SlotError),
    #[error("starting the slot scheduler: {0}")]
    Scheduler(std::io::Error),
    #[error(transparent)]
    Conditioning(#[from] dv_synth::SynthError),
}

/// The line a load prints: the voice, its folder, and whether its golden
/// checks ran or their verdict came from the cache.
fn loaded_line(name: &str, dir: &Path, speaker: &Speaker) -> String {
    let parity = if speaker.parity_cached() {
        "golden parity as cached for this package and build"
    } else {
        "golden parity checked"
    };
    format!("dv-serve: voice {name:?} loaded from {}: {parity}", dir.display())
}

/// The speaker and, with `slots`, its scheduler (on this blocking thread:
/// the GPU backend compiles its kernel and checks it).
fn load(
    dir: &Path,
    options: &SpeakerOptions,
    slots: Option<&SlotConfig>,
    sampling: Sampling,
    metrics: &Metrics,
) -> Result<Loaded, LoadError> {
    let Some(sc) = slots else {
        return Ok(Loaded { speaker: Arc::new(Speaker::load(dir, options)?), slots: None });
    };
    // Plans, golden checks and conditioning run on the CPU; the backend samples.
    let cpu = SpeakerOptions { device: Device::Cpu, ..options.clone() };
    let speaker = Speaker::load(dir, &cpu)?;
    let voice = speaker.voice();
    let max_samples = (sc.max_sentence_s * speaker.sample_rate() as f64).ceil() as usize;
    let ramp = (sc.first_block > 0).then(|| Ramp { first: sc.first_block, sample_rate: speaker.sample_rate() });
    let scheduler = match sc.backend {
        SlotBackend::Cpu => {
            let (kernel, o) = speaker.cpu_sampler().ok_or(LoadError::NoCpuSampler)?;
            let b = CpuSlots::new(voice, kernel, o, sc.slots, max_samples)?.with_sampling(sampling)?;
            Scheduler::spawn_ramped(b, sc.block, ramp)
        }
        SlotBackend::Cuda { device } => {
            let b = CudaSlots::new(voice, device, sc.slots, sc.block, max_samples)?.with_sampling(sampling)?;
            eprintln!("dv-serve: GPU slots for {}: {}", dir.display(), b.describe());
            Scheduler::spawn_ramped(b, sc.block, ramp)
        }
    }
    .map_err(LoadError::Scheduler)?;
    metrics.add_slots(scheduler.stats().clone());
    let network = ConditioningNetwork::new(voice)?;
    Ok(Loaded { speaker: Arc::new(speaker), slots: Some(Arc::new(SlotEngine::new(scheduler, network))) })
}

/// The loaded voices of one server.
pub struct VoiceCache {
    path: Vec<PathBuf>,
    options: SpeakerOptions,
    default: String,
    capacity: usize,
    entries: Mutex<(u64, HashMap<String, CacheEntry>)>,
    metrics: Arc<Metrics>,
    engine: Option<SlotConfig>,
    sampling: Sampling,
}

impl VoiceCache {
    /// Voices on `path` (first match wins), loaded with `options`; `default`
    /// answers requests that name none; at most `capacity` (≥ 1) stay loaded.
    pub fn new(
        path: Vec<PathBuf>,
        options: SpeakerOptions,
        default: String,
        capacity: usize,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            path,
            options,
            default,
            capacity: capacity.max(1),
            entries: Mutex::default(),
            metrics,
            engine: None,
            sampling: dv_speak::DEFAULT_SAMPLING,
        }
    }

    /// The slot schedulers sample with `sampling` (default
    /// [`dv_speak::DEFAULT_SAMPLING`]; the worker pool takes it per request).
    pub fn with_sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = sampling;
        self
    }

    /// Each voice also gets a slot scheduler of `slots` (the server renders
    /// on slots instead of its worker pool).
    pub fn with_slots(mut self, slots: Option<SlotConfig>) -> Self {
        self.engine = slots;
        self
    }

    pub fn default_voice(&self) -> &str {
        &self.default
    }

    pub fn search_path(&self) -> &[PathBuf] {
        &self.path
    }

    /// The voices on the search path, by name.
    pub fn names(&self) -> Vec<String> {
        catalog::list(&self.path).into_iter().map(|e| e.name).collect()
    }

    /// The voices to offer: the default first (when it is on the search
    /// path), then the others by name, each with whether it is a
    /// demonstration ([`catalog::list_default_first`], [`catalog::is_demo`]).
    pub fn listed(&self) -> Vec<(String, bool)> {
        catalog::list_default_first(&self.path, &self.default)
            .into_iter()
            .map(|e| {
                let demo = catalog::is_demo(&e.name);
                (e.name, demo)
            })
            .collect()
    }

    /// Whether `name` is loaded now.
    pub fn is_loaded(&self, name: &str) -> bool {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.1.get(name).is_some_and(|s| s.speaker.initialized())
    }

    /// The speaker of `name` (the default voice for `None`), loading it on a
    /// blocking thread the first time. An unknown or malformed name is a 404
    /// listing the known voices; a package that fails to load (its golden
    /// check, a missing lexicon) is a 500 and is tried again next time.
    pub async fn get(&self, name: Option<&str>) -> Result<Arc<Speaker>, ApiError> {
        Ok(self.load(name).await?.speaker.clone())
    }

    /// [`VoiceCache::get`] with the voice's slot scheduler.
    pub(crate) async fn load(&self, name: Option<&str>) -> Result<Arc<Loaded>, ApiError> {
        let name = name.unwrap_or(&self.default);
        let dir = catalog::resolve_name(name, &self.path).map_err(|_| ApiError::voice_not_found(name, self.names()))?;
        let cell = {
            let mut guard = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            let (clock, entries) = &mut *guard;
            *clock += 1;
            let entry =
                entries.entry(name.to_string()).or_insert_with(|| CacheEntry { speaker: Arc::default(), used: 0 });
            entry.used = *clock;
            let cell = entry.speaker.clone();
            while entries.len() > self.capacity {
                // Renders in flight keep their Arc<Speaker>.
                let Some(oldest) = entries
                    .iter()
                    .filter(|(k, _)| k.as_str() != name)
                    .min_by_key(|(_, s)| s.used)
                    .map(|(k, _)| k.clone())
                else {
                    break;
                };
                entries.remove(&oldest);
            }
            let loaded = entries.values().filter(|s| s.speaker.initialized()).count();
            self.metrics.voices_loaded.store(loaded as i64, Ordering::Relaxed);
            cell
        };
        let speaker = cell
            .get_or_try_init(|| async {
                let (options, engine, metrics) = (self.options.clone(), self.engine.clone(), self.metrics.clone());
                let sampling = self.sampling;
                let owned = name.to_string();
                let loaded = tokio::task::spawn_blocking(move || {
                    let loaded = load(&dir, &options, engine.as_ref(), sampling, &metrics);
                    if let Ok(l) = &loaded {
                        eprintln!("{}", loaded_line(&owned, &dir, &l.speaker));
                    }
                    loaded
                })
                .await
                .map_err(|e| ApiError::internal(format!("loading voice {name:?}: {e}")))?;
                loaded.map(Arc::new).map_err(|e| ApiError::internal(format!("voice {name:?} did not load: {e}")))
            })
            .await?
            .clone();
        let loaded = {
            let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            entries.1.values().filter(|s| s.speaker.initialized()).count()
        };
        self.metrics.voices_loaded.store(loaded as i64, Ordering::Relaxed);
        Ok(speaker)
    }
}
