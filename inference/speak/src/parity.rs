//! The golden-parity checks: each model of a package recomputes the
//! outputs its trainer saved in `golden.safetensors` (FORMAT.md), and a
//! package whose models do not reproduce them is refused.
//!
//! Tolerances (float32 networks against PyTorch's float32):
//!
//! | model | figure | refused at |
//! | --- | --- | --- |
//! | duration/F0 | max abs difference of the raw outputs | ≥ 1e-3 |
//! | G2P | words whose beam search decodes differently | ≥ 1 |
//! | conditioning network | max abs difference | ≥ 1e-3 |
//! | WaveNet (scalar reference, teacher-forced) | max abs logit difference | ≥ 1e-2 |
//!
//! A NaN figure is refused too. A package without golden outputs (or
//! without a model's part of them) has nothing to check for that model.
//!
//! # The cached verdict
//!
//! The checks are most of a load's work (the G2P model's beam search over
//! its golden words and the teacher-forced scalar WaveNet come before a
//! short sentence's first sample). Their figures depend only on the
//! package's bytes and on the code that computes them, so
//! [`Parity::check_cached`] keeps each passing verdict in a cache directory
//! (`dv synth`: `$DV_HOME/parity`, [`Parity::cache_dir`]): one JSON file per package,
//! named by its digest ([`dv_voice::Voice::digest`]), holding the figures and
//! the build that measured them (the running executable's path, size and
//! modification time, and this crate's version). A load takes the verdict
//! when the digest and the build both match and the figures are within the
//! tolerances; anything else (another package, one changed byte, a rebuilt
//! binary, a cache file unreadable or edited) checks again. Only passes are
//! cached, so a refused package is checked, and refused, every time. A
//! cache that cannot be read or written costs a check, never an error. A
//! voice built in memory has no digest and is always checked.

use std::path::{Path, PathBuf};

use dv_synth::{ConditioningNetwork, DurationModel, G2p, Kernel, Sampler, SamplerOptions};
use dv_voice::Voice;
use serde::{Deserialize, Serialize};

use crate::error::SpeakError;

/// How the G2P model's beam search compares with the trainer's on the
/// golden words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct G2pParity {
    /// Words decoded differently from the trainer.
    pub differ: usize,
    /// Golden words.
    pub words: usize,
}

/// The conditioning network and WaveNet against the trainer's outputs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WavenetParity {
    /// Max |Δ| of the conditioning network's output.
    pub conditioning: f64,
    /// Max |Δ| of the teacher-forced logits (float32 scalar reference).
    pub logits: f64,
}

/// The measured golden-parity figures of a package, `None` where the
/// package has no golden outputs for that model.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Parity {
    /// Max |Δ| of the duration/F0 model's raw outputs.
    pub duration: Option<f32>,
    pub g2p: Option<G2pParity>,
    pub wavenet: Option<WavenetParity>,
}

/// Largest |a − b| over two equal-length slices.
fn max_diff(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (*x as f64 - *y as f64).abs()).fold(0.0, f64::max)
}

/// Recomputes the conditioning and WaveNet golden outputs with the float32
/// scalar reference.
fn wavenet_parity(voice: &Voice) -> Result<Option<WavenetParity>, SpeakError> {
    let Some(g) = voice.golden() else { return Ok(None) };
    let cond = ConditioningNetwork::new(voice)?.forward(g.features.data())?;
    let sampler = Sampler::new(voice, Kernel::Scalar, SamplerOptions::default())?;
    let mut scratch = sampler.make_scratch();
    let mut logits = vec![0.0f32; g.logits.data().len()];
    sampler.logits(&mut scratch, &cond, &g.samples, &mut logits)?;
    Ok(Some(WavenetParity {
        conditioning: max_diff(cond.data(), g.conditioning.data()),
        logits: max_diff(&logits, g.logits.data()),
    }))
}

/// How a model's outputs miss its golden ones by more than the tolerance
/// ([`SpeakError::GoldenMismatch`]'s detail).
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum ParityMiss {
    /// Duration/F0 or conditioning outputs: the largest difference.
    #[error("off by {0:.3e}")]
    OffBy(f64),
    /// WaveNet logits: the largest difference.
    #[error("logits off by {0:.3e}")]
    LogitsOffBy(f64),
    /// G2P: words whose predicted phones differ, of the golden words.
    #[error("{differ} of {words} words differ")]
    WordsDiffer { differ: usize, words: usize },
}

/// The tolerance check of the duration/F0 figure: the refusal's detail.
fn judge_duration(dd: f32) -> Result<(), ParityMiss> {
    if dd.is_nan() || dd >= 1e-3 {
        return Err(ParityMiss::OffBy(f64::from(dd)));
    }
    Ok(())
}

/// The tolerance check of the G2P figure.
fn judge_g2p(g: G2pParity) -> Result<(), ParityMiss> {
    if g.differ > 0 {
        return Err(ParityMiss::WordsDiffer { differ: g.differ, words: g.words });
    }
    Ok(())
}

/// The tolerance checks of the conditioning network's and WaveNet's
/// figures: the model refused and the detail.
fn judge_wavenet(w: WavenetParity) -> Result<(), (&'static str, ParityMiss)> {
    let (c, l) = (w.conditioning, w.logits);
    if c.is_nan() || c >= 1e-3 {
        return Err(("conditioning network", ParityMiss::OffBy(c)));
    }
    if l.is_nan() || l >= 1e-2 {
        return Err(("WaveNet", ParityMiss::LogitsOffBy(l)));
    }
    Ok(())
}

impl Parity {
    /// Measures every model of `voice` that has golden outputs and refuses
    /// the package ([`SpeakError::GoldenMismatch`], naming `dir` and the
    /// model) when one is off by more than its tolerance (module docs).
    pub fn check(voice: &Voice, dir: &Path) -> Result<Parity, SpeakError> {
        let mismatch =
            |model: &'static str, detail: ParityMiss| SpeakError::GoldenMismatch { dir: dir.to_path_buf(), model, detail };
        let mut parity = Parity::default();
        if voice.config().duration.is_some() {
            let d = DurationModel::new(voice)?.golden_parity(voice)?;
            if let Some(dd) = d {
                judge_duration(dd).map_err(|detail| mismatch("duration/F0", detail))?;
            }
            parity.duration = d;
        }
        if voice.config().g2p.is_some() {
            if let Some(differ) = G2p::new(voice)?.golden_parity(voice)? {
                let words = voice.golden().and_then(|g| g.g2p.as_ref()).map_or(0, |g| g.letters.shape()[0]);
                let g = G2pParity { differ, words };
                judge_g2p(g).map_err(|detail| mismatch("G2P", detail))?;
                parity.g2p = Some(g);
            }
        }
        if let Some(w) = wavenet_parity(voice)? {
            judge_wavenet(w).map_err(|(model, detail)| mismatch(model, detail))?;
            parity.wavenet = Some(w);
        }
        Ok(parity)
    }

    /// Whether every figure is within its tolerance.
    fn passes(&self) -> bool {
        self.duration.is_none_or(|d| judge_duration(d).is_ok())
            && self.g2p.is_none_or(|g| judge_g2p(g).is_ok())
            && self.wavenet.is_none_or(|w| judge_wavenet(w).is_ok())
    }

    /// [`Parity::check`], or the passing verdict cached in `cache` for this
    /// package and this build (module docs), with whether it came from the
    /// cache. A new passing verdict is written to `cache` (created if
    /// missing). `cache: None`, or a voice without a digest, always checks.
    pub fn check_cached(voice: &Voice, dir: &Path, cache: Option<&Path>) -> Result<(Parity, bool), SpeakError> {
        let (Some(cache), Some(package), Some(build)) = (cache, voice.digest(), build_id()) else {
            return Ok((Self::check(voice, dir)?, false));
        };
        let path = cache.join(format!("{package}.json"));
        let cached = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice::<Verdict>(&b).ok());
        if let Some(v) = cached {
            if v.package == package && v.build == build && v.parity.passes() {
                return Ok((v.parity, true));
            }
        }
        let parity = Self::check(voice, dir)?;
        let verdict = Verdict { package: package.to_string(), build, parity };
        if let Ok(json) = serde_json::to_vec_pretty(&verdict) {
            // A cache: a write that fails only costs a check next time.
            if std::fs::create_dir_all(cache).is_ok() {
                let _ = dv_util::write_atomic(&path, &json);
            }
        }
        Ok((parity, false))
    }

    /// The cache folder of the verdicts: `$DV_HOME/parity` (default
    /// `~/.cache/deepvoice-rs/parity`).
    pub fn cache_dir() -> Option<PathBuf> {
        crate::calibrate::dv_home().map(|h| h.join("parity"))
    }
}

/// A passing verdict as the cache holds it (module docs).
#[derive(Serialize, Deserialize)]
struct Verdict {
    /// The package's digest.
    package: String,
    /// The build that measured it ([`build_id`]).
    build: String,
    parity: Parity,
}

/// The running build: this crate's version and the executable's path, size
/// and modification time (any rebuild changes them). `None` when the
/// executable cannot be examined: then nothing is cached.
fn build_id() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let meta = std::fs::metadata(&exe).ok()?;
    let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(format!("dv-speak {} {} {} bytes {} ns", env!("CARGO_PKG_VERSION"), exe.display(), meta.len(), mtime.as_nanos()))
}
