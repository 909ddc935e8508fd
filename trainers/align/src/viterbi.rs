//! CTC Viterbi forced alignment on the CPU: the oracle of
//! `kernels/ctc_viterbi.cu`.
//!
//! A transcript of `L` labels (no blanks) is expanded to `n = 2L + 1` states,
//! blanks between and around the labels: `state 2k + 1` is label `k`, even
//! states are blank. Each frame stays in its state, moves to the next, or
//! skips a blank (`j - 2 -> j`) when state `j` is a label different from the
//! label two states back. The path starts in state 0 or 1 and ends in the
//! last label or the final blank. The Viterbi recursion keeps the best score
//! per state:
//!
//! ```text
//! alpha[0][j] = lp[0][ext j] + (0 if j <= 1 else -inf)
//! alpha[y][j] = lp[y][ext j] + max(alpha[y-1][j], alpha[y-1][j-1], alpha[y-1][j-2] if skip allowed)
//! ```
//!
//! Ties go to the earliest candidate in that order (stay, then advance, then
//! skip), the same rule as MAS's backtrack: on a tie the path enters a state
//! as early as possible. At the end the final blank wins only when strictly
//! better than the last label. One backpointer (0, 1 or 2) per frame and
//! state is kept and followed back from the end, as the kernel does.
use crate::AlignError;

/// Padded dimensions of a CTC batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtcShape {
    /// Items in the batch.
    pub batch: usize,
    /// Padded frames per item.
    pub frames: usize,
    /// Classes per frame, the blank included.
    pub classes: usize,
    /// Padded labels per item.
    pub labels: usize,
}

/// The true lengths of one batch item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtcLen {
    /// Frames, at least 1 and at least `labels + repeated neighbours`.
    pub frames: usize,
    /// Labels in the transcript (0 aligns every frame to blank).
    pub labels: usize,
}

/// Frames `start..end` (half-open) of one label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// First frame of the label.
    pub start: usize,
    /// One past its last frame.
    pub end: usize,
}

/// One item's CTC alignment.
#[derive(Clone, Debug, PartialEq)]
pub struct CtcAlignment {
    /// Extended state of each frame (`[frames]`): even = blank, `2k + 1` =
    /// label `k`; starts in 0 or 1, ends in `2L - 1` or `2L`, and grows by 0,
    /// 1 or 2 per frame.
    pub states: Vec<i32>,
    /// Frames of each label (`[labels]`), contiguous, in order, not
    /// overlapping, each at least one frame.
    pub spans: Vec<Span>,
    /// Log-probability of the path.
    pub score: f32,
}

/// Viterbi alignment of one utterance.
///
/// # Shapes
/// * `log_probs`: `[frames, classes]`, row-major (per-frame log-softmax).
/// * `labels`: `[L]`, no blanks.
/// * returned `states`: `[frames]`; `spans`: `[L]`.
pub fn ctc_viterbi(
    log_probs: &[f32],
    frames: usize,
    classes: usize,
    labels: &[u32],
    blank: usize,
) -> Result<CtcAlignment, AlignError> {
    let shape = CtcShape { batch: 1, frames, classes, labels: labels.len() };
    let mut out = ctc_viterbi_batch(log_probs, shape, labels, &[CtcLen { frames, labels: labels.len() }], blank)?;
    Ok(out.remove(0))
}

/// Viterbi alignments of a padded batch (the same contract as
/// `GpuAligner::ctc_batch`).
///
/// # Shapes
/// * `log_probs`: `[shape.batch, shape.frames, shape.classes]`, row-major.
/// * `labels`: `[shape.batch, shape.labels]`, item `i` uses the first `lens[i].labels`.
/// * `lens`: `[shape.batch]`.
pub fn ctc_viterbi_batch(
    log_probs: &[f32],
    shape: CtcShape,
    labels: &[u32],
    lens: &[CtcLen],
    blank: usize,
) -> Result<Vec<CtcAlignment>, AlignError> {
    check_batch(log_probs, shape, labels, lens, blank)?;
    let item = shape.frames * shape.classes;
    let mut bp = Vec::new();
    let mut out = Vec::with_capacity(shape.batch);
    for (i, &len) in lens.iter().enumerate() {
        let lp = &log_probs[i * item..(i + 1) * item];
        let lab = &labels[i * shape.labels..i * shape.labels + len.labels];
        let mut states = vec![0i32; len.frames];
        let score = viterbi(lp, len.frames, shape.classes, lab, blank as u32, &mut bp, &mut states);
        if score == f32::NEG_INFINITY {
            return Err(AlignError::NoPath { item: i });
        }
        out.push(CtcAlignment { spans: spans(&states, len.labels), states, score });
    }
    Ok(out)
}

/// Validates a batch (shared with the GPU path): shapes, lengths, labels,
/// feasibility, and no NaN or +∞ in the frames used.
pub(crate) fn check_batch(
    log_probs: &[f32],
    shape: CtcShape,
    labels: &[u32],
    lens: &[CtcLen],
    blank: usize,
) -> Result<(), AlignError> {
    if blank >= shape.classes {
        return Err(AlignError::BlankOutOfRange { blank, classes: shape.classes });
    }
    let numel = shape.batch.checked_mul(shape.frames).and_then(|n| n.checked_mul(shape.classes));
    if numel != Some(log_probs.len()) {
        let expected = numel.unwrap_or(usize::MAX);
        return Err(AlignError::ShapeMismatch {
            what: "CTC log-probs [batch, frames, classes]",
            expected,
            got: log_probs.len(),
        });
    }
    let nlab = shape.batch.checked_mul(shape.labels);
    if nlab != Some(labels.len()) {
        let expected = nlab.unwrap_or(usize::MAX);
        return Err(AlignError::ShapeMismatch { what: "CTC labels [batch, labels]", expected, got: labels.len() });
    }
    if lens.len() != shape.batch {
        return Err(AlignError::ShapeMismatch { what: "CTC lengths [batch]", expected: shape.batch, got: lens.len() });
    }
    for (i, &len) in lens.iter().enumerate() {
        if len.frames == 0 {
            return Err(AlignError::Empty { item: i, what: "frames" });
        }
        if len.frames > shape.frames {
            return Err(AlignError::LengthExceedsPadding {
                item: i,
                what: "frames",
                len: len.frames,
                max: shape.frames,
            });
        }
        if len.labels > shape.labels {
            return Err(AlignError::LengthExceedsPadding {
                item: i,
                what: "labels",
                len: len.labels,
                max: shape.labels,
            });
        }
        let lab = &labels[i * shape.labels..i * shape.labels + len.labels];
        for (position, &l) in lab.iter().enumerate() {
            if l as usize >= shape.classes || l as usize == blank {
                return Err(AlignError::InvalidLabel {
                    item: i,
                    position,
                    label: l as i64,
                    classes: shape.classes,
                    blank,
                });
            }
        }
        let repeats = lab.windows(2).filter(|w| w[0] == w[1]).count();
        let needed = len.labels + repeats;
        if len.frames < needed {
            return Err(AlignError::SequenceTooLong {
                item: i,
                frames: len.frames,
                labels: len.labels,
                repeats,
                needed,
            });
        }
        let lp = &log_probs[i * shape.frames * shape.classes..][..len.frames * shape.classes];
        if let Some(k) = lp.iter().position(|&v| v.is_nan() || v == f32::INFINITY) {
            return Err(AlignError::NonFinite { item: i, row: k / shape.classes, col: k % shape.classes });
        }
    }
    Ok(())
}

/// Frames of each label from a state path (`start == usize::MAX` marks a
/// label the path never visits, impossible for a path of finite score).
pub(crate) fn spans(states: &[i32], labels: usize) -> Vec<Span> {
    let mut spans = vec![Span { start: usize::MAX, end: 0 }; labels];
    for (y, &j) in states.iter().enumerate() {
        if j >= 0 && j % 2 == 1 {
            if let Some(s) = spans.get_mut(j as usize / 2) {
                if s.start == usize::MAX {
                    s.start = y;
                }
                s.end = y + 1;
            }
        }
    }
    spans
}

/// The recursion and backtrack of one validated item; returns the score.
fn viterbi(
    lp: &[f32],
    frames: usize,
    classes: usize,
    labels: &[u32],
    blank: u32,
    bp: &mut Vec<u8>,
    states: &mut [i32],
) -> f32 {
    let n = 2 * labels.len() + 1;
    let ext = |j: usize| if j % 2 == 1 { labels[j / 2] } else { blank };
    let mut prev = vec![f32::NEG_INFINITY; n];
    let mut cur = vec![f32::NEG_INFINITY; n];
    bp.clear();
    bp.resize(frames * n, 0);
    for y in 0..frames {
        let row = &lp[y * classes..(y + 1) * classes];
        for j in 0..n {
            let lab = ext(j);
            let (best, k) = if y == 0 {
                (if j <= 1 { 0.0 } else { f32::NEG_INFINITY }, 0u8)
            } else {
                let (mut best, mut k) = (prev[j], 0u8);
                if j >= 1 && prev[j - 1] > best {
                    (best, k) = (prev[j - 1], 1);
                }
                if j % 2 == 1 && j >= 3 && lab != ext(j - 2) && prev[j - 2] > best {
                    (best, k) = (prev[j - 2], 2);
                }
                (best, k)
            };
            cur[j] = row[lab as usize] + best;
            bp[y * n + j] = k;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    // `prev` now holds the last frame.
    let mut j = if n > 1 && prev[n - 1] > prev[n - 2] { n - 1 } else { n.saturating_sub(2) };
    let score = prev[j];
    for y in (0..frames).rev() {
        states[y] = j as i32;
        if y > 0 {
            // k == 1 only when j >= 1, k == 2 only when j >= 3.
            j -= bp[y * n + j] as usize;
        }
    }
    score
}
