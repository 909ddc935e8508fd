//! Phone boundary error against a reference alignment, as Deep Voice and the
//! Montreal Forced Aligner report it: the mean absolute error of the
//! internal boundaries in milliseconds, and the share of boundaries within
//! 10, 20 and 25 ms.
//!
//! Both alignments cover the same phone sequence, so boundary `k` (between
//! phones `k` and `k + 1`) of one is compared with boundary `k` of the
//! other; the utterance's start and end are not boundaries. Where an
//! alignment has a gap between two phones (a reference TextGrid with an
//! unlabelled pause dropped), the boundary is the middle of the gap:
//! `(end_k + start_{k+1}) / 2`, which is both when they are equal. Errors
//! are pooled over boundaries, not averaged per utterance, so long
//! utterances weigh more, as in MFA's reports.
use crate::{AlignError, PhoneInterval};

/// Tolerances of the report, in milliseconds.
pub const TOLERANCES_MS: [f64; 3] = [10.0, 20.0, 25.0];

/// Slack on the tolerance comparison, in milliseconds (1 ns): times given in
/// seconds carry rounding, and a shift of exactly 10 ms should count as
/// within 10 ms.
const SLACK_MS: f64 = 1e-6;

/// Accumulates boundary errors over utterances.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BoundaryErrors {
    utterances: usize,
    boundaries: usize,
    abs_sum_ms: f64,
    signed_sum_ms: f64,
    max_abs_ms: f64,
    within: [usize; 3],
}

/// The pooled boundary errors of the utterances added so far (serialized
/// field by field, as `dv align`'s `report.json` writes it).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct BoundarySummary {
    /// Utterances added.
    pub utterances: usize,
    /// Internal boundaries compared.
    pub boundaries: usize,
    /// Mean absolute boundary error in milliseconds.
    pub mean_abs_ms: f64,
    /// Mean signed error (predicted − reference) in milliseconds: a
    /// systematic shift of the aligner's boundaries, late when positive.
    pub mean_signed_ms: f64,
    /// Largest absolute boundary error in milliseconds.
    pub max_abs_ms: f64,
    /// Share of boundaries (0 to 1) within 10 ms.
    pub within_10ms: f64,
    /// Share within 20 ms.
    pub within_20ms: f64,
    /// Share within 25 ms.
    pub within_25ms: f64,
}

impl BoundaryErrors {
    /// An empty accumulator.
    pub fn new() -> BoundaryErrors {
        BoundaryErrors::default()
    }

    /// Adds one utterance: `pred` and `reference` are the times of the same
    /// phones, in order, in seconds.
    ///
    /// # Errors
    /// [`AlignError::PhoneCountMismatch`] when the phone counts differ,
    /// [`AlignError::InvalidValue`] for a time that is not finite. Nothing
    /// is added on error.
    pub fn add(&mut self, pred: &[PhoneInterval], reference: &[PhoneInterval]) -> Result<(), AlignError> {
        if pred.len() != reference.len() {
            return Err(AlignError::PhoneCountMismatch { predicted: pred.len(), reference: reference.len() });
        }
        for p in pred.iter().chain(reference) {
            for t in [p.start, p.end] {
                if !t.is_finite() {
                    return Err(AlignError::InvalidValue { what: "phone time (seconds)", value: t });
                }
            }
        }
        let boundary = |x: &[PhoneInterval]| x.windows(2).map(|w| (w[0].end + w[1].start) / 2.0).collect::<Vec<_>>();
        for (p, r) in boundary(pred).into_iter().zip(boundary(reference)) {
            let err_ms = (p - r).abs() * 1000.0;
            self.abs_sum_ms += err_ms;
            self.signed_sum_ms += (p - r) * 1000.0;
            self.max_abs_ms = self.max_abs_ms.max(err_ms);
            for (count, tol) in self.within.iter_mut().zip(TOLERANCES_MS) {
                *count += usize::from(err_ms <= tol + SLACK_MS);
            }
            self.boundaries += 1;
        }
        self.utterances += 1;
        Ok(())
    }

    /// The pooled errors; `None` until a boundary has been compared.
    pub fn summary(&self) -> Option<BoundarySummary> {
        if self.boundaries == 0 {
            return None;
        }
        let n = self.boundaries as f64;
        let share = |i: usize| self.within[i] as f64 / n;
        Some(BoundarySummary {
            utterances: self.utterances,
            boundaries: self.boundaries,
            mean_abs_ms: self.abs_sum_ms / n,
            mean_signed_ms: self.signed_sum_ms / n,
            max_abs_ms: self.max_abs_ms,
            within_10ms: share(0),
            within_20ms: share(1),
            within_25ms: share(2),
        })
    }
}
