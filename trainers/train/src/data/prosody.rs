//! Duration/F0 training data (Deep Voice §3.3): each utterance's reference
//! phones with their durations, voicing and F0 at `f0_points` points, from a
//! `dv featurize` output (the same reading as [`crate::Chunks`]: reference
//! phones, their times and the F0 contour; utterances it cannot use are
//! skipped and counted).
//!
//! Targets per phoneme n (units of [`crate::models::duration`]): duration
//! `(end − start) / 0.01 s`; voiced share: the fraction of the contour's
//! 1/256 s points inside the phoneme that are voiced (the nearest point when
//! the phoneme holds none); F0 at times `start + (j + 0.5) / k ·
//! (end − start)` in 100 Hz, with a mask that is 1 where the contour is
//! voiced there. Stress is whatever the labels carry (the embedded corpus:
//! none). Validation is by utterance id ([`crate::is_validation`]).
//!
//! With `alignments` (a `dv align` output's `alignments.parquet`,
//! [`crate::alignment::ALIGNMENTS`]), the
//! training utterances take their phone times from the aligner instead of
//! the corpus's labels ([`retime`]), as for a corpus without reference
//! times; the held-out utterances keep the reference times, so `dv evaluate`
//! still scores against the truth. An utterance the aligner did not label,
//! or whose aligned phones are not its own, is skipped and counted.

use std::collections::HashMap;

use dv_text::{F0Contour, Phoneme, TimedPhoneme, CONDITIONING_RATE};
use dv_torch::tch;
use dv_torch::tch::{Device, Tensor};
use polars::prelude::*;
use serde::Serialize;

use super::chunks::{ChunkUtterance, Chunks, ChunksConfig};
use super::dataset::Dataset;
use super::features::is_validation;
use crate::alignment::column;
use crate::models::duration::{DURATION_INPUT, DURATION_UNIT_S, F0_UNIT_HZ};
use crate::models::model::Batch;
use crate::TrainError;

// Defined in dv-config with the run config, which parses them without libtorch.
pub use dv_config::ProsodyConfig;

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
                f0_jitter: 0.0,
                f0_predicted: 0.0,
                f0_predicted_from: None,
                stress: config.stress,
            },
            64,
        )?;
        let aligned = config.alignments.as_deref().map(read_alignments).transpose()?;
        let (mut train, mut validation) =
            (Prosody { examples: vec![], f0_points }, Prosody { examples: vec![], f0_points });
        let (mut unaligned, mut mismatched) = (0usize, 0usize);
        for u in chunks.train.utterances() {
            if is_validation(&u.id, config.seed, config.validation_fraction) {
                validation.examples.push(prosody_example(u, f0_points));
                continue;
            }
            let Some(aligned) = &aligned else {
                train.examples.push(prosody_example(u, f0_points));
                continue;
            };
            match aligned.get(&u.id).map(|a| retime(&u.phones, a)) {
                Some(Some(phones)) => {
                    let u = ChunkUtterance { phones, ..u.clone() };
                    train.examples.push(prosody_example(&u, f0_points));
                }
                Some(None) => mismatched += 1,
                None => unaligned += 1,
            }
        }
        let mut skipped = chunks.skipped.to_string();
        if aligned.is_some() {
            skipped += &format!("; aligner times: {unaligned} not aligned, {mismatched} aligned to other phones");
        }
        Ok(ProsodySplit { train, validation, skipped })
    }
}

/// One aligned phone: phoneme, start and end in seconds.
pub type AlignedPhone = (Phoneme, f64, f64);

/// [`crate::alignment::ALIGNMENTS`] of `dv align` (its columns [`column::ID`],
/// [`column::PHONES`], [`column::STARTS`], [`column::ENDS`]) by utterance
/// id.
pub fn read_alignments(path: &str) -> Result<HashMap<String, Vec<AlignedPhone>>, TrainError> {
    let local = path.strip_prefix("file://").unwrap_or(path);
    let bad = |reason: String| TrainError::Features { path: local.into(), reason };
    let file = std::fs::File::open(local).map_err(|e| bad(e.to_string()))?;
    let df = ParquetReader::new(file).finish().map_err(|e| bad(e.to_string()))?;
    let col = |name: &str| df.column(name).map_err(|e| bad(format!("column {name}: {e}")));
    let ids = col(column::ID)?.str().map_err(|e| bad(format!("column {}: {e}", column::ID)))?.clone();
    let phones = col(column::PHONES)?.list().map_err(|e| bad(format!("column {}: {e}", column::PHONES)))?.clone();
    let starts = col(column::STARTS)?.list().map_err(|e| bad(format!("column {}: {e}", column::STARTS)))?.clone();
    let ends = col(column::ENDS)?.list().map_err(|e| bad(format!("column {}: {e}", column::ENDS)))?.clone();
    let floats = |l: &ListChunked, i: usize| -> Option<Vec<f64>> { l.get_as_series(i)?.f64().ok()?.iter().collect() };
    let mut out = HashMap::with_capacity(df.height());
    for i in 0..df.height() {
        let row = (|| {
            let id = ids.get(i)?.to_string();
            let names: Vec<Phoneme> = phones
                .get_as_series(i)?
                .str()
                .ok()?
                .iter()
                .map(|p| p.and_then(super::chunks::stressed_phone).map(|p| p.phoneme))
                .collect::<Option<_>>()?;
            let (st, en) = (floats(&starts, i)?, floats(&ends, i)?);
            (names.len() == st.len() && st.len() == en.len())
                .then(|| (id, names.into_iter().zip(st).zip(en).map(|((p, s), e)| (p, s, e)).collect()))
        })();
        let Some((id, row)) = row else {
            return Err(bad(format!("row {i}: not an id with phones, starts and ends of one length")));
        };
        out.insert(id, row);
    }
    Ok(out)
}

/// The reference phones `phones` with the aligner's times. The aligner
/// labels the sequence [`crate::pair_labels`] makes: runs of silences merged
/// into one, a silence added at either end when the phones lack one. A
/// merged run's aligned span is shared among its members in proportion to
/// their reference durations. `None` when the aligned phonemes are not
/// these phones'.
pub fn retime(phones: &[TimedPhoneme], aligned: &[AlignedPhone]) -> Option<Vec<TimedPhoneme>> {
    // Groups of reference indices, one per merged phone.
    let mut groups: Vec<(Phoneme, Vec<usize>)> = Vec::new();
    for (i, p) in phones.iter().enumerate() {
        let ph = p.phoneme.phoneme;
        match groups.last_mut() {
            Some((last, members)) if ph == Phoneme::Sil && *last == Phoneme::Sil => members.push(i),
            _ => groups.push((ph, vec![i])),
        }
    }
    let lead = usize::from(groups.first().is_some_and(|g| g.0 != Phoneme::Sil));
    let trail = usize::from(groups.last().is_some_and(|g| g.0 != Phoneme::Sil));
    if aligned.len() != groups.len() + lead + trail {
        return None;
    }
    let mut out = phones.to_vec();
    for ((ph, members), &(aph, start, end)) in groups.iter().zip(&aligned[lead..]) {
        if *ph != aph {
            return None;
        }
        let total: f64 = members.iter().map(|&i| (phones[i].end - phones[i].start).max(0.0)).sum();
        let mut t = start;
        for (k, &i) in members.iter().enumerate() {
            let share = if total > 0.0 {
                (phones[i].end - phones[i].start).max(0.0) / total
            } else {
                1.0 / members.len() as f64
            };
            let next = if k + 1 == members.len() { end } else { t + share * (end - start) };
            out[i].start = t;
            out[i].end = next;
            t = next;
        }
    }
    Some(out)
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
        let seconds: f64 =
            ex.iter().map(|e| e.targets.chunks(width).map(|r| r[0] as f64).sum::<f64>() * DURATION_UNIT_S).sum();
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
        let out = tch::no_grad(|| model.forward(&b.inputs, &b.input_lengths, false, 0, &b.example_ids))?;
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
