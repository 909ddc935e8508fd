//! Choosing the CPU sampler's precision and threads for a voice on this
//! machine: a quick measurement, cached.
//!
//! CPU speed differs between machines far more than between voices of one
//! size (the (40, 64, 256) sampler ran at 1.17x real time on one 2-core VM
//! and 0.47x on another), so no default is right everywhere. [`calibrate`]
//! times each candidate — float32 and int16 weights (§5.1), one thread and,
//! where there are two cores, the main/auxiliary split of §5.1 — on
//! [`CALIBRATION_SECONDS`] of audio from the package's golden features (the
//! faster of [`REPEATS`] runs), and
//! [`Calibration::choice`] takes:
//!
//! * float32 (the exact weights) when its fastest setting reaches
//!   [`TARGET_SPEED`]x real time;
//! * otherwise int16, when it is faster;
//! * and, within the precision chosen, the thread count that ran fastest.
//!
//! The result is cached as JSON in `$DV_HOME/calibration/` under a key of
//! the voice's WaveNet sizes and the machine (CPU model, logical cores, SIMD
//! kernel), so a later run skips the measurement. Flags override it (`dv synth --int16 --threads 2`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use dv_synth::{ConditioningNetwork, Kernel, Precision, Rng, Sampler, SamplerOptions, Sampling};
use dv_voice::Voice;
use serde::{Deserialize, Serialize};

use crate::error::SpeakError;
use crate::options::SpeakerOptions;

/// Audio generated per candidate.
pub const CALIBRATION_SECONDS: f64 = 0.5;

/// Runs per candidate; the fastest counts.
pub const REPEATS: usize = 2;

/// The real-time factor float32 must reach to be chosen over int16.
pub const TARGET_SPEED: f64 = 1.5;

/// One candidate's measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub int16: bool,
    pub threads: usize,
    /// Seconds of audio per second of sampling.
    pub real_time: f64,
}

/// The trials of one voice on one machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The cache key ([`cache_key`]).
    pub key: String,
    pub trials: Vec<Trial>,
}

impl Calibration {
    /// (precision, threads) by the rule in the module docs.
    pub fn choice(&self) -> (Precision, usize) {
        let best = |int16: bool| {
            self.trials.iter().filter(|t| t.int16 == int16).max_by(|a, b| a.real_time.total_cmp(&b.real_time))
        };
        let pick = match (best(false), best(true)) {
            (Some(f), _) if f.real_time >= TARGET_SPEED => f,
            (Some(f), Some(i)) => {
                if i.real_time > f.real_time {
                    i
                } else {
                    f
                }
            }
            (Some(t), None) | (None, Some(t)) => t,
            (None, None) => return (Precision::F32, 1),
        };
        (if pick.int16 { Precision::Int16 } else { Precision::F32 }, pick.threads)
    }

    /// The trial for (precision, threads), if measured.
    pub fn trial(&self, precision: Precision, threads: usize) -> Option<&Trial> {
        self.trials.iter().find(|t| t.int16 == (precision == Precision::Int16) && t.threads == threads)
    }
}

/// The cache key of `voice` on this machine with `kernel`: the sampler's
/// speed depends on the WaveNet's sizes, not on its weights, so voices of
/// one size share a calibration.
pub fn cache_key(voice: &Voice, kernel: Kernel) -> String {
    let w = &voice.config().wavenet;
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let machine: String = format!("{cpu} {cores}c {kernel:?}")
        .chars()
        .map(|ch| if ch.is_ascii_alphanumeric() { ch.to_ascii_lowercase() } else { '-' })
        .collect();
    format!(
        "{}x{}x{}x{}-{}",
        w.layers,
        w.residual_channels,
        w.skip_channels,
        w.dilation_cycle,
        machine.trim_matches('-')
    )
}

/// Times every candidate on this machine (module docs).
pub fn measure(voice: &Voice, options: &SpeakerOptions) -> Result<Calibration, SpeakError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let dim = voice.config().conditioning.input_dim;
    let hop = voice.config().hop();
    let n = (CALIBRATION_SECONDS * voice.config().sample_rate as f64) as usize;
    let frames = n.div_ceil(hop) + 1;
    // The golden features repeated, or zeros: the work per sample does not depend on them.
    let mut feats = vec![0.0f32; frames * dim];
    if let Some(g) = voice.golden() {
        let src = g.features.data();
        if !src.is_empty() {
            for (i, v) in feats.iter_mut().enumerate() {
                *v = src[i % src.len()];
            }
        }
    }
    let cond = ConditioningNetwork::new(voice)?.forward(&feats)?;
    let mut trials = Vec::new();
    let mut block = vec![0u8; crate::DEFAULT_BLOCK];
    for int16 in [false, true] {
        for threads in [1, 2] {
            if threads > cores {
                continue;
            }
            let o = SamplerOptions {
                precision: if int16 { Precision::Int16 } else { Precision::F32 },
                nonlinearity: options.nonlinearity,
                threads,
            };
            let sampler = Sampler::new(voice, options.kernel, o)?;
            // the better of REPEATS runs: a neighbour's burst of work slows one run, not the
            // sampler (two spinning threads suffer most from a busy core)
            let mut best = f64::MAX;
            for _ in 0..REPEATS {
                let mut stream = sampler.stream(&cond, n, Sampling::Direct, Rng::new(0));
                let t = Instant::now();
                while stream.next_block(&mut block)? > 0 {}
                best = best.min(t.elapsed().as_secs_f64().max(1e-9));
            }
            trials.push(Trial { int16, threads, real_time: CALIBRATION_SECONDS / best });
        }
    }
    Ok(Calibration { key: cache_key(voice, options.kernel), trials })
}

/// The cache folder: `$DV_HOME/calibration` (default
/// `~/.cache/deepvoice-rs/calibration`).
pub fn cache_dir() -> Option<PathBuf> {
    dv_home().map(|h| h.join("calibration"))
}

/// `$DV_HOME`, else `~/.cache/deepvoice-rs`: where dv keeps its caches.
pub(crate) fn dv_home() -> Option<PathBuf> {
    std::env::var_os("DV_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/deepvoice-rs")))
}

/// The cached calibration of `voice` on this machine, or a new measurement
/// (then cached; a cache that cannot be written is not an error). Returns
/// whether it came from the cache. `refresh` measures again and replaces the
/// cached figures; `cache: None` always measures and caches nothing.
pub fn calibrate(
    voice: &Voice,
    options: &SpeakerOptions,
    cache: Option<&Path>,
    refresh: bool,
) -> Result<(Calibration, bool), SpeakError> {
    let key = cache_key(voice, options.kernel);
    let path = cache.map(|d| d.join(format!("{key}.json")));
    if let (Some(p), false) = (&path, refresh) {
        if let Some(c) = std::fs::read(p).ok().and_then(|b| serde_json::from_slice::<Calibration>(&b).ok()) {
            if c.key == key && !c.trials.is_empty() {
                return Ok((c, true));
            }
        }
    }
    let c = measure(voice, options)?;
    if let (Some(p), Ok(json)) = (&path, serde_json::to_vec_pretty(&c)) {
        // A cache: a write that fails only costs a measurement next time.
        if p.parent().is_some_and(|dir| std::fs::create_dir_all(dir).is_ok()) {
            let _ = dv_util::write_atomic(p, &json);
        }
    }
    Ok((c, false))
}
