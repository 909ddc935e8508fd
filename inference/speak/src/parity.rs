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

use std::path::Path;

use dv_synth::{ConditioningNetwork, DurationModel, G2p, Kernel, Sampler, SamplerOptions};
use dv_voice::Voice;

use crate::error::SpeakError;

/// How the G2P model's beam search compares with the trainer's on the
/// golden words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct G2pParity {
    /// Words decoded differently from the trainer.
    pub differ: usize,
    /// Golden words.
    pub words: usize,
}

/// The conditioning network and WaveNet against the trainer's outputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WavenetParity {
    /// Max |Δ| of the conditioning network's output.
    pub conditioning: f64,
    /// Max |Δ| of the teacher-forced logits (float32 scalar reference).
    pub logits: f64,
}

/// The measured golden-parity figures of a package, `None` where the
/// package has no golden outputs for that model.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
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

impl Parity {
    /// Measures every model of `voice` that has golden outputs and refuses
    /// the package ([`SpeakError::GoldenMismatch`], naming `dir` and the
    /// model) when one is off by more than its tolerance (module docs).
    pub fn check(voice: &Voice, dir: &Path) -> Result<Parity, SpeakError> {
        let mismatch =
            |model: &'static str, detail: String| SpeakError::GoldenMismatch { dir: dir.to_path_buf(), model, detail };
        let mut parity = Parity::default();
        if voice.config().duration.is_some() {
            let d = DurationModel::new(voice)?.golden_parity(voice)?;
            if let Some(dd) = d {
                if dd.is_nan() || dd >= 1e-3 {
                    return Err(mismatch("duration/F0", format!("off by {dd:.3e}")));
                }
            }
            parity.duration = d;
        }
        if voice.config().g2p.is_some() {
            if let Some(differ) = G2p::new(voice)?.golden_parity(voice)? {
                let words = voice.golden().and_then(|g| g.g2p.as_ref()).map_or(0, |g| g.letters.shape()[0]);
                if differ > 0 {
                    return Err(mismatch("G2P", format!("{differ} of {words} words differ")));
                }
                parity.g2p = Some(G2pParity { differ, words });
            }
        }
        if let Some(w) = wavenet_parity(voice)? {
            let (c, l) = (w.conditioning, w.logits);
            if c.is_nan() || c >= 1e-3 {
                return Err(mismatch("conditioning network", format!("off by {c:.3e}")));
            }
            if l.is_nan() || l >= 1e-2 {
                return Err(mismatch("WaveNet", format!("logits off by {l:.3e}")));
            }
            parity.wavenet = Some(w);
        }
        Ok(parity)
    }
}
