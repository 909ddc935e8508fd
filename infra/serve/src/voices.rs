//! Voices by name: found on the search path ([`dv_voice::catalog`]), loaded
//! on first use (golden checks included) and kept, the least recently used
//! dropped past a capacity.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use dv_speak::{Speaker, SpeakerOptions};
use dv_voice::catalog;
use tokio::sync::OnceCell;

use crate::error::ApiError;
use crate::metrics::Metrics;

struct Slot {
    speaker: Arc<OnceCell<Arc<Speaker>>>,
    used: u64,
}

/// The loaded voices of one server.
pub struct VoiceCache {
    path: Vec<PathBuf>,
    options: SpeakerOptions,
    default: String,
    capacity: usize,
    slots: Mutex<(u64, HashMap<String, Slot>)>,
    metrics: Arc<Metrics>,
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
        Self { path, options, default, capacity: capacity.max(1), slots: Mutex::default(), metrics }
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

    /// Whether `name` is loaded now.
    pub fn is_loaded(&self, name: &str) -> bool {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.1.get(name).is_some_and(|s| s.speaker.initialized())
    }

    /// The speaker of `name` (the default voice for `None`), loading it on a
    /// blocking thread the first time. An unknown or malformed name is a 404
    /// listing the known voices; a package that fails to load (its golden
    /// check, a missing lexicon) is a 500 and is tried again next time.
    pub async fn get(&self, name: Option<&str>) -> Result<Arc<Speaker>, ApiError> {
        let name = name.unwrap_or(&self.default);
        let dir = catalog::resolve_name(name, &self.path).map_err(|_| ApiError::voice_not_found(name, self.names()))?;
        let cell = {
            let mut guard = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            let (clock, slots) = &mut *guard;
            *clock += 1;
            let slot = slots.entry(name.to_string()).or_insert_with(|| Slot { speaker: Arc::default(), used: 0 });
            slot.used = *clock;
            let cell = slot.speaker.clone();
            while slots.len() > self.capacity {
                // Renders in flight keep their Arc<Speaker>.
                let Some(oldest) = slots
                    .iter()
                    .filter(|(k, _)| k.as_str() != name)
                    .min_by_key(|(_, s)| s.used)
                    .map(|(k, _)| k.clone())
                else {
                    break;
                };
                slots.remove(&oldest);
            }
            let loaded = slots.values().filter(|s| s.speaker.initialized()).count();
            self.metrics.voices_loaded.store(loaded as i64, Ordering::Relaxed);
            cell
        };
        let speaker = cell
            .get_or_try_init(|| async {
                let options = self.options.clone();
                let loaded = tokio::task::spawn_blocking(move || Speaker::load(&dir, &options))
                    .await
                    .map_err(|e| ApiError::internal(format!("loading voice {name:?}: {e}")))?;
                loaded.map(Arc::new).map_err(|e| ApiError::internal(format!("voice {name:?} did not load: {e}")))
            })
            .await?
            .clone();
        let loaded = {
            let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.1.values().filter(|s| s.speaker.initialized()).count()
        };
        self.metrics.voices_loaded.store(loaded as i64, Ordering::Relaxed);
        Ok(speaker)
    }
}
