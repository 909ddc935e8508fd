//! WaveNet training data: the §4.4 chunks that `dv featurize` indexed, each
//! with its mu-law window and the 227-dim conditioning frames (App. A.3)
//! built from the utterance's reference phones and F0.
//!
//! # What is read
//!
//! `shards/*.parquet` (columns `id`, `sample_rate`, `mulaw`, `f0_hz`,
//! `f0_start`, `ref_phones`, `ref_phone_starts`, `ref_phone_ends`) and
//! `chunks/*.parquet` (`id`, `chunk`, `window_start`, `window_samples`,
//! `context_samples`, `target_samples`) of a local featurize output, into
//! memory at start (mu-law is one byte per sample; conditioning frames are
//! built per batch, so hours of audio fit).
//!
//! # One example
//!
//! A chunk's window is `window_samples` codes from `window_start` (code 128,
//! silence, where it lies outside the audio); its conditioning is the
//! `window_samples / hop` frames from `window_start / hop` of the whole
//! utterance's frames, the first or last frame repeated outside them. Every
//! chunk featurize writes starts on a frame (its start is a multiple of the
//! 1 s target span minus the 0.25 s context, both multiples of 1/256 s);
//! one that does not is skipped and counted.
//!
//! # F0 normalization
//!
//! Log F0 is normalized to the observed range over the whole featurize
//! output (App. A.3: "normalizing the log of F0 to minimum observed F0"),
//! unless `[data] f0_min_hz` and `f0_max_hz` fix it. "Observed" is the 1st
//! to 99th percentile of the voiced frames ([`F0Normalization::robust`]):
//! the minimum and maximum are set by the pitch tracker's few octave errors
//! (75.0–499.9 Hz, the tracker's own floor and ceiling, on a natural voice of
//! issue 41). The range is part of the voice: `dv export` recomputes it the
//! same way.
//!
//! # Skipped utterances
//!
//! No reference phones, a phone outside the inventory, times that do not
//! fit (non-finite, decreasing, overlapping), a sample rate other than
//! `hop × 256`, or a malformed column: the utterance and its chunks are
//! skipped and counted ([`Skipped`]), never fatal. Validation is by
//! utterance id ([`crate::is_validation`]), so no utterance is in both sets.

use std::collections::HashMap;
use std::path::Path;

use dv_featurize::format::{self, chunk_column, column};
use dv_text::{
    conditioning_features, conditioning_frames, F0Contour, F0Normalization, Phoneme, Stress, StressedPhoneme,
    TimedPhoneme, CONDITIONING_DIM, CONDITIONING_RATE,
};
use dv_torch::tch::{Device, Tensor};
use polars::prelude::*;

use super::dataset::Dataset;
use super::features::{data_err, is_validation, local_dir, parquet_files};
use super::skipped::{Reason, Skipped};
use crate::models::model::Batch;
use crate::models::wavenet::SILENCE_CODE;
use crate::TrainError;

// Defined in dv-config with the run config, which parses them without libtorch.
pub use dv_config::ChunksConfig;

/// One utterance kept in memory.
#[derive(Debug, Clone)]
pub struct ChunkUtterance {
    pub id: String,
    pub mulaw: Vec<u8>,
    pub phones: Vec<TimedPhoneme>,
    pub f0_hz: Vec<f32>,
    pub f0_start: f64,
}

impl ChunkUtterance {
    /// The whole utterance's conditioning frames, frame-major
    /// `[frames, 227]`.
    pub fn conditioning(&self, norm: &F0Normalization, rate: u32) -> Result<(Vec<f32>, usize), TrainError> {
        self.conditioning_with(&self.f0_hz, norm, rate)
    }

    /// [`Self::conditioning`] with another F0 contour on the utterance's
    /// grid (`f0_start`, 256 Hz) in place of the recording's.
    pub fn conditioning_with(
        &self,
        hz: &[f32],
        norm: &F0Normalization,
        rate: u32,
    ) -> Result<(Vec<f32>, usize), TrainError> {
        let frames = conditioning_frames(self.mulaw.len(), rate).max(1);
        let contour = F0Contour { start: self.f0_start, step: 1.0 / CONDITIONING_RATE as f64, hz };
        let mut out = Vec::new();
        conditioning_features(&self.phones, &contour, norm, frames, &mut out)
            .map_err(|e| TrainError::Features { path: self.id.clone(), reason: e.to_string() })?;
        Ok((out, frames))
    }
}

/// One chunk: utterance index and window.
#[derive(Debug, Clone, Copy)]
struct ChunkRef {
    utterance: usize,
    window_start: i64,
    window_samples: usize,
    context_samples: usize,
    target_samples: usize,
}

/// Chunks addressed by index.
#[derive(Debug, Clone)]
pub struct Chunks {
    utterances: std::sync::Arc<Vec<ChunkUtterance>>,
    chunks: Vec<ChunkRef>,
    pub norm: F0Normalization,
    pub sample_rate: u32,
    pub hop: usize,
    /// `[data] f0_jitter` for the training split, 0 for validation.
    pub f0_jitter: f32,
    /// `[data] f0_predicted` for the training split, 0 for validation.
    pub f0_predicted: f32,
    /// The duration/F0 model's F0 for each utterance (by index), on its
    /// F0 grid, when `[data] f0_predicted` > 0.
    predicted_hz: Option<std::sync::Arc<Vec<Vec<f32>>>>,
}

/// A loaded corpus split in two.
pub struct ChunkSplit {
    pub train: Chunks,
    pub validation: Chunks,
    pub skipped: Skipped,
    pub utterances: usize,
    pub shards: usize,
}

/// Parses a reference phone: festival's name with an optional stress digit.
pub fn stressed_phone(name: &str) -> Option<StressedPhoneme> {
    let digit = name.chars().last().filter(|c| c.is_ascii_digit());
    let base = if digit.is_some() { &name[..name.len() - 1] } else { name };
    let p = Phoneme::from_festival(base).ok()?;
    let stress = match digit {
        Some(d) => Stress::from_digit(d)?,
        None => p.stress,
    };
    Some(StressedPhoneme::new(p.phoneme, stress))
}

fn read_utterances(path: &Path, rate: u32, skips: &mut Skipped) -> Result<Vec<ChunkUtterance>, TrainError> {
    let cols = [
        column::ID,
        column::SAMPLE_RATE,
        column::MULAW,
        column::F0_HZ,
        column::F0_START,
        column::REF_PHONES,
        column::REF_PHONE_STARTS,
        column::REF_PHONE_ENDS,
    ];
    let file = std::fs::File::open(path).map_err(|e| data_err(path, e))?;
    let df = ParquetReader::new(file)
        .with_columns(Some(cols.map(String::from).to_vec()))
        .finish()
        .map_err(|e| data_err(path, e))?;
    let col = |name: &str| df.column(name).map_err(|e| data_err(path, format!("column {name}: {e}")));
    let ids = col(column::ID)?.str().map_err(|e| data_err(path, e))?.clone();
    let rates = col(column::SAMPLE_RATE)?.cast(&DataType::UInt32).map_err(|e| data_err(path, e))?;
    let rates = rates.u32().map_err(|e| data_err(path, e))?.clone();
    let mulaw = col(column::MULAW)?.binary().map_err(|e| data_err(path, e))?.clone();
    let f0 = col(column::F0_HZ)?.list().map_err(|e| data_err(path, e))?.clone();
    let f0_start = col(column::F0_START)?.f64().map_err(|e| data_err(path, e))?.clone();
    let names = col(column::REF_PHONES)?.list().map_err(|e| data_err(path, e))?.clone();
    let starts = col(column::REF_PHONE_STARTS)?.list().map_err(|e| data_err(path, e))?.clone();
    let ends = col(column::REF_PHONE_ENDS)?.list().map_err(|e| data_err(path, e))?.clone();
    let floats = |l: &ListChunked, i: usize| -> Option<Vec<f64>> {
        let s = l.get_as_series(i)?.cast(&DataType::Float64).ok()?;
        s.f64().ok()?.iter().collect()
    };
    let mut out = Vec::new();
    for i in 0..df.height() {
        let (Some(id), Some(r), Some(audio), Some(f0s)) = (ids.get(i), rates.get(i), mulaw.get(i), f0_start.get(i))
        else {
            skips.count(Reason::Malformed);
            continue;
        };
        if r != rate {
            skips.count(Reason::WrongSampleRate);
            continue;
        }
        let hz: Option<Vec<f32>> =
            f0.get_as_series(i).and_then(|s| s.f32().ok().map(|c| c.iter().map(|v| v.unwrap_or(0.0)).collect()));
        let Some(hz) = hz else {
            skips.count(Reason::Malformed);
            continue;
        };
        let phone_names: Option<Vec<String>> = names
            .get_as_series(i)
            .and_then(|s| s.str().ok().and_then(|c| c.iter().map(|p| p.map(String::from)).collect()));
        let Some(phone_names) = phone_names.filter(|v| !v.is_empty()) else {
            skips.count(Reason::NoReference);
            continue;
        };
        let (Some(st), Some(en)) = (floats(&starts, i), floats(&ends, i)) else {
            skips.count(Reason::BadTimes);
            continue;
        };
        if st.len() != phone_names.len() || en.len() != phone_names.len() {
            skips.count(Reason::BadTimes);
            continue;
        }
        let mut phones = Vec::with_capacity(phone_names.len());
        let mut unknown = false;
        for ((n, &s), &e) in phone_names.iter().zip(&st).zip(&en) {
            match stressed_phone(n) {
                Some(p) => phones.push(TimedPhoneme { phoneme: p, start: s, end: e }),
                None => unknown = true,
            }
        }
        if unknown {
            skips.count(Reason::UnknownPhone);
            continue;
        }
        let u = ChunkUtterance { id: id.to_string(), mulaw: audio.to_vec(), phones, f0_hz: hz, f0_start: f0s };
        // Check the times once here, so batches never fail on them.
        if u.conditioning(&F0Normalization::PRAAT_RANGE, rate).is_err() {
            skips.count(Reason::BadTimes);
            continue;
        }
        out.push(u);
    }
    Ok(out)
}

fn read_chunks(path: &Path) -> Result<Vec<(String, ChunkRef)>, TrainError> {
    let file = std::fs::File::open(path).map_err(|e| data_err(path, e))?;
    let df = ParquetReader::new(file).finish().map_err(|e| data_err(path, e))?;
    let u64col = |name: &str| -> Result<UInt64Chunked, TrainError> {
        let c = df.column(name).map_err(|e| data_err(path, format!("column {name}: {e}")))?;
        let c = c.cast(&DataType::Int64).map_err(|e| data_err(path, e))?;
        let c = c.i64().map_err(|e| data_err(path, e))?.clone();
        Ok(c.iter().map(|v| v.map(|x| x as u64)).collect())
    };
    let ids = df.column(chunk_column::ID).map_err(|e| data_err(path, e))?.str().map_err(|e| data_err(path, e))?.clone();
    let ws = df
        .column(chunk_column::WINDOW_START)
        .map_err(|e| data_err(path, e))?
        .cast(&DataType::Int64)
        .map_err(|e| data_err(path, e))?;
    let ws = ws.i64().map_err(|e| data_err(path, e))?.clone();
    let (wn, cx, tg) = (
        u64col(chunk_column::WINDOW_SAMPLES)?,
        u64col(chunk_column::CONTEXT_SAMPLES)?,
        u64col(chunk_column::TARGET_SAMPLES)?,
    );
    let mut out = Vec::new();
    for i in 0..df.height() {
        if let (Some(id), Some(s), Some(n), Some(c), Some(t)) = (ids.get(i), ws.get(i), wn.get(i), cx.get(i), tg.get(i))
        {
            out.push((
                id.to_string(),
                ChunkRef {
                    utterance: usize::MAX,
                    window_start: s,
                    window_samples: n as usize,
                    context_samples: c as usize,
                    target_samples: t as usize,
                },
            ));
        }
    }
    Ok(out)
}

impl Chunks {
    /// Reads a featurize output and splits it (module docs). `hop` is the
    /// model's samples per conditioning frame.
    pub fn load(config: &ChunksConfig, hop: usize) -> Result<ChunkSplit, TrainError> {
        let dir = local_dir(&config.url)?;
        let rate = (hop * CONDITIONING_RATE as usize) as u32;
        let mut skipped = Skipped::default();
        let shards = parquet_files(&dir, format::SHARDS)?;
        let mut utterances = Vec::new();
        for s in &shards {
            utterances.extend(read_utterances(s, rate, &mut skipped)?);
        }
        if !config.stress {
            for p in utterances.iter_mut().flat_map(|u| u.phones.iter_mut()) {
                p.phoneme.stress = Stress::None;
            }
        }
        utterances.sort_by(|a, b| a.id.cmp(&b.id));
        let index: HashMap<String, usize> = utterances.iter().enumerate().map(|(i, u)| (u.id.clone(), i)).collect();
        let norm = match (config.f0_min_hz, config.f0_max_hz) {
            (Some(min_hz), Some(max_hz)) => F0Normalization { min_hz, max_hz },
            (None, None) => F0Normalization::robust(utterances.iter().flat_map(|u| u.f0_hz.iter()))
                .unwrap_or(F0Normalization::PRAAT_RANGE),
            _ => {
                return Err(TrainError::Config {
                    path: "[data]".into(),
                    reason: "give both f0_min_hz and f0_max_hz, or neither".into(),
                })
            }
        };
        let mut all = Vec::new();
        for c in parquet_files(&dir, format::CHUNKS)? {
            all.extend(read_chunks(&c)?);
        }
        all.sort_by(|a, b| (a.0.as_str(), a.1.window_start).cmp(&(b.0.as_str(), b.1.window_start)));
        let (mut train, mut val) = (Vec::new(), Vec::new());
        for (id, mut c) in all {
            let usable = c.window_start.rem_euclid(hop as i64) == 0
                && c.window_samples % hop == 0
                && c.window_samples > 0
                && c.context_samples + c.target_samples <= c.window_samples;
            match index.get(&id) {
                Some(&u) if usable => {
                    c.utterance = u;
                    if is_validation(&id, config.seed, config.validation_fraction) {
                        val.push(c)
                    } else {
                        train.push(c)
                    }
                }
                _ => skipped.count(Reason::ChunkUnusable),
            }
        }
        let utterances = std::sync::Arc::new(utterances);
        if !(config.f0_jitter >= 0.0 && config.f0_jitter.is_finite()) {
            return Err(TrainError::Config {
                path: "[data] f0_jitter".into(),
                reason: format!("{} is not a non-negative number", config.f0_jitter),
            });
        }
        if !(0.0..=1.0).contains(&config.f0_predicted) {
            return Err(TrainError::Config {
                path: "[data] f0_predicted".into(),
                reason: format!("{} is not a share in [0, 1]", config.f0_predicted),
            });
        }
        let predicted_hz = match (config.f0_predicted > 0.0, &config.f0_predicted_from) {
            (false, _) => None,
            (true, None) => {
                return Err(TrainError::Config {
                    path: "[data] f0_predicted_from".into(),
                    reason: "f0_predicted > 0 needs a duration/F0 checkpoint to predict F0 with".into(),
                })
            }
            (true, Some(from)) => Some(std::sync::Arc::new(predicted_f0(&utterances, Path::new(from))?)),
        };
        let make = |chunks, f0_jitter, f0_predicted| Chunks {
            utterances: utterances.clone(),
            chunks,
            norm,
            sample_rate: rate,
            hop,
            f0_jitter,
            f0_predicted,
            predicted_hz: predicted_hz.clone(),
        };
        Ok(ChunkSplit {
            train: make(train, config.f0_jitter, config.f0_predicted),
            validation: make(val, 0.0, 0.0),
            skipped,
            utterances: utterances.len(),
            shards: shards.len(),
        })
    }

    /// Seconds of target audio.
    pub fn target_seconds(&self) -> f64 {
        self.chunks.iter().map(|c| c.target_samples).sum::<usize>() as f64 / self.sample_rate as f64
    }

    /// Every usable utterance of the featurize output (both splits), by id
    /// order.
    pub fn utterances(&self) -> &[ChunkUtterance] {
        &self.utterances
    }

    /// The utterance a chunk belongs to.
    pub fn utterance(&self, chunk: usize) -> Option<&ChunkUtterance> {
        self.chunks.get(chunk).map(|c| &self.utterances[c.utterance])
    }

    /// One chunk's conditioning frames `[F, 227]` and window codes.
    pub fn example(&self, index: usize) -> Result<(Vec<f32>, Vec<i64>), TrainError> {
        self.example_with(index, false)
    }

    /// [`Self::example`], conditioned on the duration/F0 model's F0 when
    /// `predicted` and the split has it (`[data] f0_predicted`).
    pub fn example_with(&self, index: usize, predicted: bool) -> Result<(Vec<f32>, Vec<i64>), TrainError> {
        let c = self.chunks.get(index).ok_or_else(|| TrainError::Features {
            path: "(in memory)".into(),
            reason: format!("chunk {index} past the {} chunks", self.chunks.len()),
        })?;
        let u = &self.utterances[c.utterance];
        let codes: Vec<i64> = (0..c.window_samples as i64)
            .map(|k| {
                let j = c.window_start + k;
                if j >= 0 && (j as usize) < u.mulaw.len() {
                    u.mulaw[j as usize] as i64
                } else {
                    SILENCE_CODE
                }
            })
            .collect();
        let (all, frames) = match (&self.predicted_hz, predicted) {
            (Some(p), true) => u.conditioning_with(&p[c.utterance], &self.norm, self.sample_rate)?,
            _ => u.conditioning(&self.norm, self.sample_rate)?,
        };
        let first = c.window_start.div_euclid(self.hop as i64);
        let n = c.window_samples / self.hop;
        let mut cond = Vec::with_capacity(n * CONDITIONING_DIM);
        for k in 0..n as i64 {
            let f = (first + k).clamp(0, frames as i64 - 1) as usize;
            cond.extend_from_slice(&all[f * CONDITIONING_DIM..(f + 1) * CONDITIONING_DIM]);
        }
        Ok((cond, codes))
    }
}

impl Dataset for Chunks {
    fn len(&self) -> usize {
        self.chunks.len()
    }

    fn length(&self, index: usize) -> usize {
        self.chunks.get(index).map_or(0, |c| c.window_samples)
    }

    /// # Shapes
    /// `inputs` `[b, F, 227]`, `targets` `[b, N]` int64 (all chunks of a
    /// batch must have the same window; featurize writes one size).
    fn batch(&self, indices: &[usize], device: Device) -> Result<Batch, TrainError> {
        let mut cond = Vec::new();
        let mut codes = Vec::new();
        let (mut starts, mut ends) = (Vec::new(), Vec::new());
        let mut window = None;
        let mut seconds = 0.0;
        for (position, &i) in indices.iter().enumerate() {
            let predicted =
                self.f0_predicted > 0.0 && unit_draw(jitter_seed(indices, position)) < f64::from(self.f0_predicted);
            let (mut c, y) = self.example_with(i, predicted)?;
            if self.f0_jitter > 0.0 {
                jitter_f0(&mut c, self.f0_jitter, jitter_seed(indices, position));
            }
            let w = *window.get_or_insert(y.len());
            if w != y.len() {
                return Err(TrainError::Features {
                    path: "(in memory)".into(),
                    reason: format!("chunks of {w} and {} samples in one batch", y.len()),
                });
            }
            let r = self.chunks[i];
            starts.push(r.context_samples as i64);
            ends.push((r.context_samples + r.target_samples) as i64);
            seconds += r.target_samples as f64 / self.sample_rate as f64;
            cond.extend(c);
            codes.extend(y);
        }
        let (b, n) = (indices.len() as i64, window.unwrap_or(0) as i64);
        Ok(Batch {
            inputs: Tensor::from_slice(&cond)
                .f_view([b, n / self.hop as i64, CONDITIONING_DIM as i64])?
                .f_to_device(device)?,
            input_lengths: ends,
            targets: Tensor::from_slice(&codes).f_view([b, n])?.f_to_device(device)?,
            target_lengths: starts,
            example_ids: indices.to_vec(),
            audio_seconds: Some(seconds),
        })
    }
}

/// A number in `[0, 1)` from `seed`, drawn apart from the jitter's own
/// draws (which chunks get the predicted F0).
fn unit_draw(seed: u64) -> f64 {
    (dv_util::splitmix64(seed ^ 0x5eed_f0f0_d1ce_0001) >> 11) as f64 / (1u64 << 53) as f64
}

/// The F0 that the duration/F0 checkpoint `from` predicts for each
/// utterance's aligned phones, placed at their aligned times on the
/// utterance's F0 grid as `dv synth` places it at predicted times (the point
/// of the phoneme under each grid time; 0 where the model says unvoiced or
/// outside the phones): ground-truth-aligned conditioning.
pub fn predicted_f0(utterances: &[ChunkUtterance], from: &Path) -> Result<Vec<Vec<f32>>, TrainError> {
    let (model, _) = crate::export::load_duration(from)?;
    let points = model.config.duration.f0_points;
    let unit = model.config.duration.f0_unit_hz as f32;
    let width = 2 + points;
    let step = 1.0 / CONDITIONING_RATE as f64;
    utterances
        .iter()
        .map(|u| {
            let data = super::prosody::Prosody {
                examples: vec![super::prosody::prosody_example(u, points)],
                f0_points: points,
            };
            let b = data.batch(&[0], Device::Cpu)?;
            let out = dv_torch::tch::no_grad(|| model.forward(&b.inputs, &b.input_lengths, false, 0, &[0]))?;
            let rows = Vec::<f32>::try_from(out.f_reshape([-1])?)?;
            if rows.len() != u.phones.len() * width {
                return Err(TrainError::Features {
                    path: u.id.clone(),
                    reason: format!("the duration/F0 model gave {} outputs for {} phones", rows.len(), u.phones.len()),
                });
            }
            let mut hz = vec![0.0f32; u.f0_hz.len()];
            let mut k = 0;
            for (j, v) in hz.iter_mut().enumerate() {
                let t = u.f0_start + j as f64 * step;
                while k + 1 < u.phones.len() && t >= u.phones[k].end {
                    k += 1;
                }
                let (ph, o) = (&u.phones[k], &rows[k * width..(k + 1) * width]);
                let d = ph.end - ph.start;
                let voiced = o[1] > 0.0; // sigmoid(o[1]) > 0.5
                if voiced && d > 0.0 && t >= ph.start && t < ph.end {
                    let pos = (((t - ph.start) / d) * points as f64).floor().clamp(0.0, points as f64 - 1.0) as usize;
                    *v = (o[2 + pos] * unit).max(0.0);
                }
            }
            Ok(hz)
        })
        .collect()
}

/// A seed for one example's F0 jitter from its batch (the shuffled indices,
/// which differ from epoch to epoch) and its place in it: deterministic, so
/// a resumed run draws the same noise.
fn jitter_seed(indices: &[usize], position: usize) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15 ^ position as u64;
    for &i in indices {
        h = dv_util::splitmix64(h ^ i as u64);
    }
    h
}

/// Moves the normalized log F0 (feature 1) of the voiced frames (feature 0
/// set) of `cond` (`[F, 227]` frame-major) by an offset of standard deviation
/// `sigma` plus a slope reaching a standard deviation of `sigma / 2` at the
/// chunk's ends (`[data] f0_jitter`).
pub fn jitter_f0(cond: &mut [f32], sigma: f32, seed: u64) {
    let mut rng = dv_util::SplitMix64::new(seed);
    let mut normal = || {
        // Box-Muller from two uniform draws in (0, 1]
        let u = ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let v = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32
    };
    let (offset, slope) = (sigma * normal(), 0.5 * sigma * normal());
    let frames = cond.len() / CONDITIONING_DIM;
    for (f, frame) in cond.chunks_exact_mut(CONDITIONING_DIM).enumerate() {
        if frame[0] > 0.5 {
            // -1 at the first frame, +1 at the last
            let x = if frames > 1 { 2.0 * f as f32 / (frames - 1) as f32 - 1.0 } else { 0.0 };
            frame[1] += offset + slope * x;
        }
    }
}
