//! Duration/F0 training data (Deep Voice §3.3): each utterance's reference
//! phones with their durations, voicing and F0 at `f0_points` points, from a
//! `dv featurize` output (the same reading as [`crate::Chunks`]: reference
//! phones, their times and the F0 contour; utterances it cannot use are
//! skipped and counted).
//!
//! Targets per phoneme n (units of [`crate::duration`]): duration
//! `(end − start) / 0.01 s`; voiced share: the fraction of the contour's
//! 1/256 s points inside the phoneme that are voiced (the nearest point when
//! the phoneme holds none); F0 at times `start + (j + 0.5) / k ·
//! (end − start)` in 100 Hz, with a mask that is 1 where the contour is
//! voiced there. Stress is whatever the labels carry (the embedded corpus:
//! none). Validation is by utterance id ([`crate::is_validation`]).

use dv_text::{F0Contour, CONDITIONING_RATE};
use serde::{Deserialize, Serialize};
use tch::{Device, Tensor};

use crate::chunks::{ChunkUtterance, Chunks, ChunksConfig};
use crate::data::Dataset;
use crate::duration::{DURATION_INPUT, DURATION_UNIT_S, F0_UNIT_HZ};
use crate::features::is_validation;
use crate::model::Batch;
use crate::TrainError;

/// `[data] kind = "prosody"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProsodyConfig {
    /// A `dv featurize --out` directory: a local path or a `file://` URL.
    pub url: String,
    #[serde(default = "default_validation_fraction")]
    pub validation_fraction: f64,
    #[serde(default)]
    pub seed: u64,
}

fn default_validation_fraction() -> f64 {
    0.05
}

/// One utterance's model inputs and targets.
#[derive(Debug, Clone)]
pub struct ProsodyExample {
    pub id: String,
    /// `(phoneme index, stress index)` per phoneme.
    pub phonemes: Vec<(usize, usize)>,
    /// `[P, 2 + 2k]` row-major (module docs).
    pub targets: Vec<f32>,
}

/// Utterances addressed by index.
#[derive(Debug, Clone, Default)]
pub struct Prosody {
    pub examples: Vec<ProsodyExample>,
    pub f0_points: usize,
}

/// The targets of one utterance.
pub fn prosody_example(u: &ChunkUtterance, f0_points: usize) -> ProsodyExample {
    let step = 1.0 / CONDITIONING_RATE as f64;
    let contour = F0Contour { start: u.f0_start, step, hz: &u.f0_hz };
    let width = 2 + 2 * f0_points;
    let mut targets = Vec::with_capacity(u.phones.len() * width);
    let mut phonemes = Vec::with_capacity(u.phones.len());
    for p in &u.phones {
        let d = (p.end - p.start).max(0.0);
        phonemes.push((p.phoneme.phoneme.index(), p.phoneme.stress.index()));
        targets.push((d / DURATION_UNIT_S) as f32);
        // Voiced share over the contour's points that fall in the phoneme.
        let first = ((p.start - u.f0_start) / step).ceil().max(0.0) as i64;
        let last = ((p.end - u.f0_start) / step).ceil() as i64; // exclusive
        let (mut voiced, mut total) = (0usize, 0usize);
        for f in first..last.max(first) {
            total += 1;
            if contour.at(u.f0_start + f as f64 * step).is_some() {
                voiced += 1;
            }
        }
        let share = if total > 0 {
            voiced as f32 / total as f32
        } else if contour.at(0.5 * (p.start + p.end)).is_some() {
            1.0
        } else {
            0.0
        };
        targets.push(share);
        let mut mask = Vec::with_capacity(f0_points);
        for j in 0..f0_points {
            let t = p.start + (j as f64 + 0.5) / f0_points as f64 * d;
            match contour.at(t) {
                Some(hz) => {
                    targets.push((hz as f64 / F0_UNIT_HZ) as f32);
                    mask.push(1.0);
                }
                None => {
                    targets.push(0.0);
                    mask.push(0.0);
                }
            }
        }
        targets.extend(mask);
    }
    ProsodyExample { id: u.id.clone(), phonemes, targets }
}

/// A loaded corpus split in two, with what was skipped.
pub struct ProsodySplit {
    pub train: Prosody,
    pub validation: Prosody,
    pub skipped: String,
}

impl Prosody {
    pub fn load(config: &ProsodyConfig, f0_points: usize) -> Result<ProsodySplit, TrainError> {
        let chunks = Chunks::load(
            &ChunksConfig {
                url: config.url.clone(),
                validation_fraction: 0.0,
                seed: 0,
                f0_min_hz: None,
                f0_max_hz: None,
            },
            64,
        )?;
        let (mut train, mut validation) =
            (Prosody { examples: vec![], f0_points }, Prosody { examples: vec![], f0_points });
        for u in chunks.train.utterances() {
            let e = prosody_example(u, f0_points);
            if is_validation(&u.id, config.seed, config.validation_fraction) {
                validation.examples.push(e);
            } else {
                train.examples.push(e);
            }
        }
        Ok(ProsodySplit { train, validation, skipped: chunks.skipped.to_string() })
    }
}

impl Dataset for Prosody {
    fn len(&self) -> usize {
        self.examples.len()
    }

    fn length(&self, index: usize) -> usize {
        self.examples.get(index).map_or(0, |e| e.phonemes.len())
    }

    /// # Shapes
    /// `inputs` `[b, P_max, 45]`, `targets` `[b, P_max, 2 + 2k]`, zero past
    /// each length.
    fn batch(&self, indices: &[usize], device: Device) -> Result<Batch, TrainError> {
        let width = 2 + 2 * self.f0_points;
        let mut ex = Vec::with_capacity(indices.len());
        for &i in indices {
            ex.push(self.examples.get(i).ok_or_else(|| TrainError::Features {
                path: "(in memory)".into(),
                reason: format!("utterance {i} past the {}", self.examples.len()),
            })?);
        }
        let pmax = ex.iter().map(|e| e.phonemes.len()).max().unwrap_or(0).max(1);
        let b = ex.len();
        let mut inputs = vec![0.0f32; b * pmax * DURATION_INPUT as usize];
        let mut targets = vec![0.0f32; b * pmax * width];
        for (k, e) in ex.iter().enumerate() {
            for (n, &(p, s)) in e.phonemes.iter().enumerate() {
                let row = (k * pmax + n) * DURATION_INPUT as usize;
                inputs[row + p] = 1.0;
                inputs[row + 40 + s] = 1.0;
            }
            targets[k * pmax * width..k * pmax * width + e.targets.len()].copy_from_slice(&e.targets);
        }
        let seconds: f64 = ex.iter().map(|e| e.targets.chunks(width).map(|r| r[0] as f64).sum::<f64>() * DURATION_UNIT_S).sum();
        Ok(Batch {
            inputs: Tensor::from_slice(&inputs).f_view([b as i64, pmax as i64, DURATION_INPUT])?.f_to_device(device)?,
            input_lengths: ex.iter().map(|e| e.phonemes.len() as i64).collect(),
            targets: Tensor::from_slice(&targets).f_view([b as i64, pmax as i64, width as i64])?.f_to_device(device)?,
            target_lengths: ex.iter().map(|e| e.phonemes.len() as i64).collect(),
            example_ids: indices.to_vec(),
            audio_seconds: Some(seconds),
        })
    }
}

/// Held-out accuracy in the paper's terms.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ProsodyMetrics {
    /// Mean absolute duration error per phoneme, ms.
    pub duration_mae_ms: f64,
    /// Mean absolute F0 error over points voiced in the reference, Hz.
    pub f0_mae_hz: f64,
    /// Share of phonemes whose voicing (p > 0.5 vs share > 0.5) is right.
    pub voicing_accuracy: f64,
    pub phonemes: usize,
    pub utterances: usize,
}

/// Evaluates raw model outputs `[P, 2 + k]` against an example.
pub fn accumulate(out: &[f32], e: &ProsodyExample, k: usize, acc: &mut (f64, f64, usize, usize, usize)) {
    let width = 2 + 2 * k;
    for (o, t) in out.chunks(2 + k).zip(e.targets.chunks(width)) {
        acc.0 += (o[0].max(0.0) as f64 - t[0] as f64).abs() * DURATION_UNIT_S * 1000.0;
        if (o[1] > 0.0) == (t[1] > 0.5) {
            acc.3 += 1;
        }
        for j in 0..k {
            if t[2 + k + j] > 0.0 {
                acc.1 += (o[2 + j] as f64 - t[2 + j] as f64).abs() * F0_UNIT_HZ;
                acc.4 += 1;
            }
        }
        acc.2 += 1;
    }
}

/// Held-out metrics of `model` on `data` (eval mode, one utterance at a
/// time, CPU or the model's device).
pub fn evaluate(model: &crate::DurationModel, data: &Prosody) -> Result<ProsodyMetrics, TrainError> {
    let k = data.f0_points;
    let device = model.var_store().device();
    let mut acc = (0.0, 0.0, 0usize, 0usize, 0usize);
    for (i, e) in data.examples.iter().enumerate() {
        let b = data.batch(&[i], device)?;
        let out = tch::no_grad(|| model.forward(&b.inputs, false, 0, &b.example_ids))?;
        let out = Vec::<f32>::try_from(out.f_to_device(Device::Cpu)?.f_reshape([-1])?)?;
        accumulate(&out, e, k, &mut acc);
    }
    Ok(ProsodyMetrics {
        duration_mae_ms: acc.0 / acc.2.max(1) as f64,
        f0_mae_hz: acc.1 / acc.4.max(1) as f64,
        voicing_accuracy: acc.3 as f64 / acc.2.max(1) as f64,
        phonemes: acc.2,
        utterances: data.examples.len(),
    })
}
