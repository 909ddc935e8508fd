//! Quarantine of utterances the aligner explains badly: a wrong transcript,
//! clipped or noisy audio, a speaker mix-up. Their alignments would teach
//! the duration and pitch models wrong targets, so they are set aside
//! before training.
//!
//! The score is the per-utterance confidence of
//! [`phone_timing`](crate::phone_timing), the mean log-likelihood per
//! frame. An utterance is quarantined when its confidence is below
//!
//! ```text
//! median − k · 1.4826 · MAD,   MAD = median(|c_i − median|)
//! ```
//!
//! The median and the MAD (median absolute deviation) are robust: unlike
//! the mean and standard deviation, the outliers being looked for cannot
//! drag the threshold towards themselves. The factor 1.4826 makes the MAD
//! estimate the standard deviation of normal data, so `k` reads as "standard
//! deviations"; [`DEFAULT_K`] = 5 sets aside only clear failures (beyond
//! 5σ, under 3 in 10 million of normal data). Only the low side is tested:
//! a confidence far above the median is not a failure.
//!
//! When more than half the confidences are equal the MAD is 0; then the
//! mean absolute deviation from the median, ×1.2533 (its normal-consistency
//! factor), stands in for it, and when that is 0 too (all equal) nothing is
//! quarantined. The fallback is not robust: a lone outlier in a corpus of
//! `n` enters the mean deviation itself and is caught only when `n > 1.2533
//! k` (7 or more for `k = 5`).
//!
//! A segmentation model is surer of the audio it trained on than of the
//! utterances its run held out; [`quarantine_by_group`] judges each group
//! against its own median and spread, so that the held-out ones are not all
//! set aside for being unseen (48 of the 49 quarantined of an hour of speech
//! were, with one threshold for both).
use crate::AlignError;

/// The default `k`: quarantine below the median minus 5 scaled MADs.
pub const DEFAULT_K: f64 = 5.0;

/// Scales the MAD to the standard deviation of normal data (1 / Φ⁻¹(3/4)).
pub const MAD_SCALE: f64 = 1.4826;

/// Scales the mean absolute deviation to the standard deviation of normal
/// data (√(π/2)).
const MEAN_AD_SCALE: f64 = 1.2533;

/// The utterances set aside, and the statistics that chose them.
#[derive(Clone, Debug, PartialEq)]
pub struct Quarantine<I> {
    /// Ids of the quarantined utterances, lowest confidence first (ties in
    /// input order).
    pub ids: Vec<I>,
    /// Median confidence of the corpus.
    pub median: f64,
    /// The scaled spread: `1.4826 · MAD`, or the mean-deviation fallback.
    pub spread: f64,
    /// Confidences strictly below this are quarantined.
    pub threshold: f64,
}

/// The utterances whose confidence is below `median − k · spread`.
///
/// `confidences` pairs each utterance id with its confidence.
///
/// # Errors
/// [`AlignError::Empty`] for no utterances; [`AlignError::InvalidValue`]
/// for a non-finite confidence or a `k` that is negative or not finite.
pub fn quarantine<I: Clone>(confidences: &[(I, f64)], k: f64) -> Result<Quarantine<I>, AlignError> {
    if !(k.is_finite() && k >= 0.0) {
        return Err(AlignError::InvalidValue { what: "quarantine factor k (finite, >= 0)", value: k });
    }
    if confidences.is_empty() {
        return Err(AlignError::Empty { item: 0, what: "confidences" });
    }
    if let Some(&(_, c)) = confidences.iter().find(|(_, c)| !c.is_finite()) {
        return Err(AlignError::InvalidValue { what: "utterance confidence", value: c });
    }
    let values: Vec<f64> = confidences.iter().map(|&(_, c)| c).collect();
    let median = median_of(values.clone());
    let deviations: Vec<f64> = values.iter().map(|c| (c - median).abs()).collect();
    let mad = median_of(deviations.clone());
    let spread = if mad > 0.0 {
        MAD_SCALE * mad
    } else {
        MEAN_AD_SCALE * deviations.iter().sum::<f64>() / deviations.len() as f64
    };
    let threshold = median - k * spread;
    let mut low: Vec<(usize, f64)> = values.iter().copied().enumerate().filter(|&(_, c)| c < threshold).collect();
    // Stable: equal confidences keep their input order.
    low.sort_by(|a, b| a.1.total_cmp(&b.1));
    let ids = low.into_iter().map(|(i, _)| confidences[i].0.clone()).collect();
    Ok(Quarantine { ids, median, spread, threshold })
}

/// Median of a non-empty set of finite values (the mean of the two middle
/// ones for an even count).
fn median_of(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// [`quarantine`] of the utterances `unseen` says the segmentation model
/// trained on, and separately of the others: the first group's statistics,
/// with the ids of both (the trained-on ones first), and the second's own
/// statistics when both groups hold utterances.
///
/// # Errors
/// As [`quarantine`].
#[allow(clippy::type_complexity)] // (everything quarantined, the held-out group alone) reads plainer than an alias
pub fn quarantine_by_group<I: Clone>(
    confidences: &[(I, f64)],
    unseen: impl Fn(&I) -> bool,
    k: f64,
) -> Result<(Quarantine<I>, Option<Quarantine<I>>), AlignError> {
    let (held, seen): (Vec<(I, f64)>, Vec<(I, f64)>) = confidences.iter().cloned().partition(|(id, _)| unseen(id));
    if held.is_empty() || seen.is_empty() {
        return Ok((quarantine(confidences, k)?, None));
    }
    let mut q = quarantine(&seen, k)?;
    let h = quarantine(&held, k)?;
    q.ids.extend(h.ids.iter().cloned());
    Ok((q, Some(h)))
}
