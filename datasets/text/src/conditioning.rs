//! The WaveNet conditioning signal of Deep Voice App. A.3: phonemes with
//! durations and an F0 contour, sampled at 256 Hz into 227-dimensional frames.
//!
//! Frame layout (`CONDITIONING_DIM` = 2 + 5 × 45 = 227 floats):
//!
//! | offset | width | meaning |
//! | --- | --- | --- |
//! | 0 | 1 | voiced flag: 1 when the F0 contour is voiced at the frame, else 0 |
//! | 1 | 1 | normalized log F0 ([`F0Normalization`]), 0 when unvoiced |
//! | 2 + 45 s | 40 | phoneme identity one-hot ([`Phoneme::index`]) of context slot `s` |
//! | 2 + 45 s + 40 | 5 | stress one-hot ([`Stress::index`]) of context slot `s` |
//!
//! Context slots `s = 0..5` are the phonemes at positions `k - 2, k - 1, k,
//! k + 1, k + 2` of the sequence, where `k` is the phoneme under the frame. A
//! slot past either end of the utterance is all zeros (distinct from silence,
//! which is its own phoneme).
//!
//! Durations are quantized to 1/256 s by repetition, as the paper does: frame
//! `i` covers `[i / 256, (i + 1) / 256)` s and belongs to phoneme `k` when
//! `round(start_k × 256) <= i < round(start_{k+1} × 256)`. Rounding the
//! boundaries, not the durations, keeps every boundary within half a frame
//! of its true time instead of letting the error accumulate; a phoneme
//! shorter than half a frame can own no frame (it still appears as context
//! of its neighbours). Frames before the first start take the first phoneme,
//! a gap between two phonemes belongs to the earlier one, and frames after
//! the last start belong to the last phoneme.

use crate::phoneme::{Phoneme, Stress, StressedPhoneme};

/// Frames per second of the conditioning signal (Deep Voice App. A.3).
pub const CONDITIONING_RATE: u32 = 256;
/// Context phonemes on each side of the current one.
pub const CONTEXT: usize = 2;
/// Floats per phoneme slot: identity and stress one-hots.
pub const SLOT_DIM: usize = Phoneme::COUNT + Stress::COUNT;
/// Floats per conditioning frame: voicing, log F0, and five phoneme slots.
pub const CONDITIONING_DIM: usize = 2 + (2 * CONTEXT + 1) * SLOT_DIM;

/// A phoneme with its start and end in seconds from the start of the audio.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimedPhoneme {
    pub phoneme: StressedPhoneme,
    pub start: f64,
    pub end: f64,
}

/// An F0 contour on a regular grid: `hz[j]` is the F0 at `start + j × step`
/// seconds, 0 (or any value that is not a positive finite number) where
/// unvoiced. The pitch tracker's output and the duration/F0 model's output
/// both take this form.
#[derive(Debug, Clone, Copy)]
pub struct F0Contour<'a> {
    pub start: f64,
    pub step: f64,
    pub hz: &'a [f32],
}

impl F0Contour<'_> {
    /// The F0 at time `t` (nearest grid point), or `None` when unvoiced or
    /// outside the contour by more than half a step.
    pub fn at(&self, t: f64) -> Option<f32> {
        if self.hz.is_empty() || self.step <= 0.0 {
            return None;
        }
        let j = ((t - self.start) / self.step).round();
        if j < 0.0 || j >= self.hz.len() as f64 {
            return None;
        }
        let v = self.hz[j as usize];
        (v.is_finite() && v > 0.0).then_some(v)
    }
}

/// Deep Voice's "normalized log-frequency, computed by normalizing the log of
/// F0 to minimum observed F0 to be approximately between -1 and 1":
/// `2 ln(f / min) / ln(max / min) - 1`, so the lowest observed F0 maps to -1
/// and the highest to +1. Values outside the observed range fall slightly
/// outside [-1, 1] and are not clamped.
/// The share of voiced frames [`F0Normalization::robust`] leaves out at each
/// end of the F0 range.
pub const ROBUST_QUANTILE: f64 = 0.01;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct F0Normalization {
    pub min_hz: f32,
    pub max_hz: f32,
}

impl F0Normalization {
    /// The range a pitch tracker can report when nothing has been observed
    /// (Deep Voice's Praat floor and ceiling, 75–500 Hz).
    pub const PRAAT_RANGE: F0Normalization = F0Normalization { min_hz: 75.0, max_hz: 500.0 };

    /// The observed range of the voiced values of `hz`, or `None` when fewer
    /// than two distinct voiced values exist.
    pub fn observed<'a>(hz: impl IntoIterator<Item = &'a f32>) -> Option<F0Normalization> {
        let (mut lo, mut hi) = (f32::INFINITY, 0.0f32);
        for &v in hz {
            if v.is_finite() && v > 0.0 {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        (hi > lo).then_some(F0Normalization { min_hz: lo, max_hz: hi })
    }

    /// The range of the voiced values of `hz` from their 1st to their 99th
    /// percentile ([`ROBUST_QUANTILE`]), or `None` when it is empty. A pitch
    /// tracker's octave errors (a few frames at its floor or ceiling) set the
    /// minimum and maximum of a corpus, not these: on a natural voice the
    /// observed range came out as the tracker's own 75–500 Hz. Values outside
    /// the range normalize slightly outside [-1, 1], as in [`Self::observed`].
    pub fn robust<'a>(hz: impl IntoIterator<Item = &'a f32>) -> Option<F0Normalization> {
        let mut v: Vec<f32> = hz.into_iter().copied().filter(|v| v.is_finite() && *v > 0.0).collect();
        if v.len() < 2 {
            return None;
        }
        v.sort_by(f32::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        let (lo, hi) = (at(ROBUST_QUANTILE), at(1.0 - ROBUST_QUANTILE));
        (hi > lo).then_some(F0Normalization { min_hz: lo, max_hz: hi })
    }

    /// The normalized log F0 of `hz` (positive).
    pub fn normalize(&self, hz: f32) -> f32 {
        let span = (self.max_hz as f64 / self.min_hz as f64).ln();
        (2.0 * (hz as f64 / self.min_hz as f64).ln() / span - 1.0) as f32
    }
}

/// Why a conditioning signal could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConditioningError {
    #[error("no phonemes")]
    NoPhonemes,
    #[error("phoneme {index} ({phoneme}) has start {start} s after its end {end} s, or a non-finite time")]
    BadSpan { index: usize, phoneme: StressedPhoneme, start: f64, end: f64 },
    #[error("phoneme {index} starts at {start} s, before phoneme {} ends at {previous_end} s", index - 1)]
    Overlap { index: usize, start: f64, previous_end: f64 },
    #[error("F0 normalization range {min_hz}–{max_hz} Hz is not a positive increasing range")]
    BadNormalization { min_hz: f32, max_hz: f32 },
}

/// The index of the phoneme under each of `frames` frames at 256 Hz (the
/// quantization described in the module docs).
pub fn frame_phonemes(phones: &[TimedPhoneme], frames: usize) -> Result<Vec<usize>, ConditioningError> {
    check(phones)?;
    let rate = CONDITIONING_RATE as f64;
    let mut out = Vec::with_capacity(frames);
    let mut k = 0;
    for i in 0..frames {
        // Advance to the last phoneme whose quantized start is at or before frame i.
        while k + 1 < phones.len() && (phones[k + 1].start * rate).round() <= i as f64 {
            k += 1;
        }
        out.push(k);
    }
    Ok(out)
}

/// Number of 256 Hz frames covering `samples` samples at `sample_rate` Hz
/// (the last frame may be partial).
pub fn conditioning_frames(samples: usize, sample_rate: u32) -> usize {
    (samples as u64 * CONDITIONING_RATE as u64).div_ceil(sample_rate as u64) as usize
}

/// Builds `frames` conditioning frames into `out` (cleared first, then
/// `frames × CONDITIONING_DIM` floats, frame-major). The voicing flag and log
/// F0 of frame `i` come from the contour at the frame's centre,
/// `(i + 0.5) / 256` s.
pub fn conditioning_features(
    phones: &[TimedPhoneme],
    f0: &F0Contour<'_>,
    norm: &F0Normalization,
    frames: usize,
    out: &mut Vec<f32>,
) -> Result<(), ConditioningError> {
    if !(norm.min_hz > 0.0 && norm.max_hz > norm.min_hz && norm.max_hz.is_finite()) {
        return Err(ConditioningError::BadNormalization { min_hz: norm.min_hz, max_hz: norm.max_hz });
    }
    let owner = frame_phonemes(phones, frames)?;
    out.clear();
    out.resize(frames * CONDITIONING_DIM, 0.0);
    for (i, (frame, &k)) in out.chunks_exact_mut(CONDITIONING_DIM).zip(&owner).enumerate() {
        if let Some(hz) = f0.at((i as f64 + 0.5) / CONDITIONING_RATE as f64) {
            frame[0] = 1.0;
            frame[1] = norm.normalize(hz);
        }
        for slot in 0..2 * CONTEXT + 1 {
            let Some(j) = (k + slot).checked_sub(CONTEXT) else { continue };
            let Some(p) = phones.get(j) else { continue };
            let base = 2 + slot * SLOT_DIM;
            frame[base + p.phoneme.phoneme.index()] = 1.0;
            frame[base + Phoneme::COUNT + p.phoneme.stress.index()] = 1.0;
        }
    }
    Ok(())
}

fn check(phones: &[TimedPhoneme]) -> Result<(), ConditioningError> {
    if phones.is_empty() {
        return Err(ConditioningError::NoPhonemes);
    }
    for (index, p) in phones.iter().enumerate() {
        if !(p.start.is_finite() && p.end.is_finite() && p.start <= p.end) {
            return Err(ConditioningError::BadSpan { index, phoneme: p.phoneme, start: p.start, end: p.end });
        }
        // Label files round times; allow a microsecond of overlap.
        if index > 0 && p.start < phones[index - 1].end - 1e-6 {
            return Err(ConditioningError::Overlap { index, start: p.start, previous_end: phones[index - 1].end });
        }
    }
    Ok(())
}
