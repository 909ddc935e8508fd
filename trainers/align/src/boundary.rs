//! Phoneme boundaries from a CTC alignment of phoneme pairs (Deep Voice §3.2).
//!
//! The segmentation model is trained with CTC on phoneme *pairs*: `sil HH EH
//! L OW sil` becomes `(sil,HH) (HH,EH) (EH,L) (L,OW) (OW,sil)`, and the
//! network fires each pair near the boundary between its two phonemes. For
//! `n` phonemes there are `n - 1` pairs; forced alignment ([`ctc_viterbi`])
//! gives each pair a span of frames, and pair `k` (phonemes `k`, `k + 1`)
//! places the boundary `b_k` between them:
//!
//! ```text
//! phoneme 0:      [0,        b_0)
//! phoneme k:      [b_{k-1},  b_k)
//! phoneme n - 1:  [b_{n-2},  duration)
//! ```
//!
//! # Where in a pair's span the boundary lies
//!
//! Frames are **centred**: frame `y` is the analysis window centred at
//! `y · step`, as librosa's `center=True` and `dv_audio::Mfcc` frame the
//! MFCCs, so it stands for `[(y − ½) · step, (y + ½) · step)`, clipped at 0
//! (frame 0's window is half padding). A span `start..end` covers
//! `[max(0, start − ½) · step, (end − ½) · step)`, and the boundary is the
//! span's **midpoint in time**: `(start + end − 1) · step / 2`, or
//! `(end − ½) · step / 2` when the span starts on frame 0. A peaky CTC model
//! gives each pair a run of one or two frames; the midpoint is then the
//! centre of the spike. Where the run is longer (early in training, or where
//! the pair beats blank over a slow transition) the first frame would bias
//! every boundary early by half the run, and so would the Viterbi tie rule,
//! which enters a state as early as possible; the midpoint halves both
//! biases. It is positive even when the first pair fires on frame 0, so the
//! first phoneme always has a duration.
//!
//! Taking frame `y` as `[y · step, (y + 1) · step)` instead puts every
//! boundary half a frame late: on 223 held-out utterances of the embedded
//! corpus that convention measured a mean shift of +5.1 ms against the
//! exact boundaries (`benchmarks/align.md`).
//!
//! # Pauses at the ends of an utterance
//!
//! The first pair `(sil, X)` and the last `(X, sil)` are not tied to a
//! moment by CTC: nothing before the first label or after the last one
//! constrains where it fires, and a trained model emits them at the very
//! first and last frames. On the embedded corpus's held-out utterances that
//! put the first boundary a median 172 ms early and the last a median
//! 170 ms late, while pauses inside the utterance were within 8–13 ms.
//! [`speech_extent`] finds where speech starts and ends from the frames'
//! levels, as `librosa.effects.trim` does, and [`clamp_edge_pauses`] moves
//! those two boundaries to it when the model's boundary lies in the pause.
//! A model trained on little speech (20 minutes) goes further: it fires the
//! first *few* pairs on the first frames, squeezing several phonemes into
//! the leading pause (and likewise at the end), beyond what moving one
//! boundary can mend. [`confine_labels`] lowers the probability of every
//! pair but the two edge ones outside the speech extent ([`speech_frames`])
//! before decoding, so that the inner pairs are
//! placed inside speech by the model's own posteriors, and the edge ones
//! are then clamped as before.
//!
//! # Guarantees
//!
//! Spans must be non-empty, in order, not overlapping and inside the
//! alignment's frames (what [`ctc_viterbi`] returns); then the midpoints are
//! strictly increasing and positive, so every phoneme has a positive
//! duration, starts are increasing and `end_k == start_{k+1}` exactly. The
//! last boundary must fall before `duration`, which may differ from `frames
//! · step` (MFCC framing can pad the end). Any violation is an error, never
//! a clamped or reordered output.
//!
//! [`ctc_viterbi`]: crate::ctc_viterbi
use crate::{AlignError, CtcAlignment};

/// One phoneme's time, in seconds, half-open `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhoneInterval {
    /// Start of the phoneme in seconds.
    pub start: f64,
    /// End of the phoneme in seconds (the next phoneme's start).
    pub end: f64,
}

/// The phoneme times of one utterance and how well the model explained it.
#[derive(Clone, Debug, PartialEq)]
pub struct PhoneTiming {
    /// `[n]` for an alignment of `n - 1` pairs: contiguous, each of positive
    /// duration, the first starting at 0, the last ending at the duration.
    pub phones: Vec<PhoneInterval>,
    /// The path's log-probability divided by its frames: the mean
    /// log-likelihood per frame, in the base of the model's log-probs; at
    /// most 0, higher is better (see [`quarantine`](crate::quarantine())).
    pub confidence: f64,
}

/// Phoneme start and end times from a CTC alignment of phoneme pairs: each
/// boundary at its pair's span's midpoint in time (module docs).
///
/// `frame_step` is the seconds between frames (0.01 for the 10 ms MFCC
/// stride of §3.2) and `duration` the utterance's length in seconds.
///
/// # Shapes
/// * `alignment.spans`: `[n - 1]`, one per pair; `alignment.states`:
///   `[frames]` (only its length is used).
/// * returned `phones`: `[n]`.
///
/// # Errors
/// [`AlignError::Empty`] for an alignment of no frames,
/// [`AlignError::InvalidValue`] for a non-finite score or a step or
/// duration that is not finite and positive, [`AlignError::InvalidSpan`]
/// for spans that are empty, overlapping, out of order or past the frames,
/// [`AlignError::BoundaryPastEnd`] when the last boundary is not before
/// `duration`.
pub fn phone_timing(alignment: &CtcAlignment, frame_step: f64, duration: f64) -> Result<PhoneTiming, AlignError> {
    let frames = alignment.states.len();
    if frames == 0 {
        return Err(AlignError::Empty { item: 0, what: "frames" });
    }
    if !(frame_step.is_finite() && frame_step > 0.0) {
        return Err(AlignError::InvalidValue { what: "frame step (seconds, finite and > 0)", value: frame_step });
    }
    if !(duration.is_finite() && duration > 0.0) {
        return Err(AlignError::InvalidValue { what: "duration (seconds, finite and > 0)", value: duration });
    }
    if !alignment.score.is_finite() {
        return Err(AlignError::InvalidValue { what: "alignment score", value: alignment.score as f64 });
    }
    let mut prev_end = 0;
    let mut boundaries = Vec::with_capacity(alignment.spans.len());
    for (index, span) in alignment.spans.iter().enumerate() {
        let (start, end) = (span.start, span.end);
        let reason = if start >= end {
            Some("empty (the path never visits this pair)")
        } else if end > frames {
            Some("ends past the alignment's last frame")
        } else if start < prev_end {
            Some("overlaps or precedes the previous pair")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(AlignError::InvalidSpan { index, start, end, reason });
        }
        prev_end = end;
        // Twice the span's start and end in frames, from centred frames: exact
        // in f64 below 2^52, and so is the quartering.
        let twice_start = (2 * start).saturating_sub(1);
        boundaries.push((twice_start + 2 * end - 1) as f64 * frame_step / 4.0);
    }
    let mut phones = Vec::with_capacity(boundaries.len() + 1);
    let mut start = 0.0;
    for &b in boundaries.iter().chain(std::iter::once(&duration)) {
        phones.push(PhoneInterval { start, end: b });
        start = b;
    }
    // Strictly increasing by construction for any realistic frame count and
    // step; checked so the guarantee does not rest on float arithmetic.
    for (index, p) in phones.iter().enumerate() {
        if p.end <= p.start {
            if index + 1 == phones.len() {
                return Err(AlignError::BoundaryPastEnd { boundary: p.start, duration });
            }
            let span = alignment.spans[index];
            let reason = "gives a boundary not after the previous one (frame step too small)";
            return Err(AlignError::InvalidSpan { index, start: span.start, end: span.end, reason });
        }
    }
    Ok(PhoneTiming { phones, confidence: alignment.score as f64 / frames as f64 })
}

/// The start of the first and the end of the last frame whose level is
/// within `top_db` of the loudest frame (seconds; centred frames `step`
/// apart, clipped at 0), as `librosa.effects.trim` finds speech; `None` when
/// no level is finite.
pub fn speech_extent(levels_db: &[f64], step: f64, top_db: f64) -> Option<(f64, f64)> {
    let (first, end) = speech_frames(levels_db, top_db)?;
    Some((((first as f64) - 0.5).max(0.0) * step, (end as f64 - 0.5) * step))
}

/// [`speech_extent`] in frames: `[first, last + 1)` of the frames within
/// `top_db` of the loudest; `None` when no level is finite.
pub fn speech_frames(levels_db: &[f64], top_db: f64) -> Option<(usize, usize)> {
    let max = levels_db.iter().copied().filter(|v| v.is_finite()).fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return None;
    }
    let loud = |v: &f64| v.is_finite() && *v >= max - top_db;
    let first = levels_db.iter().position(loud)?;
    let last = levels_db.iter().rposition(loud)?;
    Some((first, last + 1))
}

/// What [`confine_labels`] takes from a label's log-probability at a frame
/// outside the window: far more than any model's preference between blank
/// and a label (log-softmax values of a trained model lie above -100), yet
/// finite, so that a path exists even when the labels cannot fit inside.
pub const CONFINE_PENALTY: f32 = 1.0e4;

/// Makes a CTC decoder spend the frames outside `window` (`[from, to)`) on
/// the classes in `keep` (blank, and the first and last pairs): every other
/// class's log-probability there is lowered by [`CONFINE_PENALTY`]. Used
/// with [`speech_frames`], it keeps every pair but the edge ones inside
/// speech, where a model trained on little data
/// otherwise fires the first few pairs on the first frames of the leading
/// pause and the last few on the last frames of the trailing one (squeezing
/// several phonemes into the pause, where [`clamp_edge_pauses`] cannot move
/// them). The edge pairs keep their freedom: [`clamp_edge_pauses`] places
/// them, and the level rule there is closer to the truth than the model's
/// own edge pairs (`benchmarks/newspeaker.md`). A path through the kept
/// classes outside the window scores as it did; [`inner_within`] says
/// whether the decoded path kept to the window.
///
/// # Shapes
/// `rows`: `[frames, classes]`, row-major log-probabilities.
pub fn confine_labels(rows: &mut [f32], classes: usize, keep: &[usize], window: (usize, usize)) {
    if classes == 0 {
        return;
    }
    for (f, row) in rows.chunks_exact_mut(classes).enumerate() {
        if f >= window.0 && f < window.1 {
            continue;
        }
        for (c, v) in row.iter_mut().enumerate() {
            if !keep.contains(&c) {
                *v -= CONFINE_PENALTY;
            }
        }
    }
}

/// Whether every label of `alignment` but the first and the last lies
/// inside `window` (`[from, to)` frames); an alignment of two labels or
/// fewer does.
pub fn inner_within(alignment: &CtcAlignment, window: (usize, usize)) -> bool {
    let n = alignment.spans.len();
    n <= 2 || (alignment.spans[1].start >= window.0 && alignment.spans[n - 2].end <= window.1)
}

/// Moves the boundary after a leading pause (`leading`: `phones[0]` is a
/// pause) later to `extent.0`, and the boundary before a trailing pause
/// earlier to `extent.1`, each only when the model's boundary lies inside
/// the pause the extent finds and the move leaves every phoneme a positive
/// duration. Returns how many boundaries moved.
pub fn clamp_edge_pauses(phones: &mut [PhoneInterval], leading: bool, trailing: bool, extent: (f64, f64)) -> usize {
    let n = phones.len();
    if n < 2 {
        return 0;
    }
    let mut moved = 0;
    let (onset, offset) = extent;
    if leading && onset > phones[0].end && onset < phones[1].end {
        phones[0].end = onset;
        phones[1].start = onset;
        moved += 1;
    }
    if trailing && offset < phones[n - 1].start && offset > phones[n - 2].start {
        phones[n - 2].end = offset;
        phones[n - 1].start = offset;
        moved += 1;
    }
    moved
}
