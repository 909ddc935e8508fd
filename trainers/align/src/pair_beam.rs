//! The boundary decoder of Deep Voice §3.2: a beam search (width 50 in the
//! paper) over the segmentation model's frame posteriors with the
//! constraint that neighbouring phoneme pairs overlap by one phoneme —
//! pair (a, b) may only follow a pair (x, a) — keeping track of the frames
//! where each pair is emitted. It needs no transcript: the pairs it
//! decodes spell the phoneme sequence, and each pair's span gives the
//! boundary between its two phonemes ([`crate::phone_timing`]).
//!
//! Hypotheses are CTC paths scored by their log-probability (max, not sum:
//! a hypothesis keeps the spans of its best path); paths that reach the
//! same labels and the same blank/label state merge, keeping the better.
//! Only the `prune` most likely non-blank classes of a frame may start a
//! new pair; a pair already started may always continue.

use std::collections::HashMap;

use crate::viterbi::{CtcAlignment, Span};
use crate::AlignError;

/// A decoded utterance: pair classes and their alignment.
#[derive(Clone, Debug, PartialEq)]
pub struct PairDecoding {
    pub labels: Vec<u32>,
    pub alignment: CtcAlignment,
}

#[derive(Clone)]
struct Hyp {
    labels: Vec<u32>,
    spans: Vec<Span>,
    score: f64,
}

/// Decodes one utterance (module docs). `pair_of(class)` gives a class's
/// two phonemes, `None` for the blank and classes that are no pair.
///
/// # Shapes
/// `log_probs`: `[frames, classes]`, row-major.
pub fn constrained_pair_beam(
    log_probs: &[f32],
    frames: usize,
    classes: usize,
    blank: usize,
    pair_of: impl Fn(u32) -> Option<(u16, u16)>,
    width: usize,
    prune: usize,
) -> Result<PairDecoding, AlignError> {
    if log_probs.len() != frames * classes {
        return Err(AlignError::ShapeMismatch {
            what: "pair beam log-probabilities",
            expected: frames * classes,
            got: log_probs.len(),
        });
    }
    if blank >= classes {
        return Err(AlignError::InvalidLabel { item: 0, position: 0, label: blank as i64, classes, blank });
    }
    if width == 0 || prune == 0 || frames == 0 {
        return Err(AlignError::Empty { item: 0, what: "frames, beam width or prune" });
    }
    // (labels, last frame was blank) → best hypothesis
    let mut beams: Vec<((Vec<u32>, bool), Hyp)> =
        vec![((vec![], true), Hyp { labels: vec![], spans: vec![], score: 0.0 })];
    let mut order: Vec<usize> = (0..classes).collect();
    for t in 0..frames {
        let row = &log_probs[t * classes..(t + 1) * classes];
        if let Some(c) = row.iter().position(|v| v.is_nan() || *v == f32::INFINITY) {
            return Err(AlignError::NonFinite { item: 0, row: t, col: c });
        }
        order.sort_unstable_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
        let cands: Vec<(u32, (u16, u16))> = order
            .iter()
            .filter(|&&c| c != blank)
            .filter_map(|&c| pair_of(c as u32).map(|p| (c as u32, p)))
            .take(prune)
            .collect();
        let mut next: HashMap<(Vec<u32>, bool), Hyp> = HashMap::with_capacity(beams.len() * (cands.len() + 2));
        let mut offer = |key: (Vec<u32>, bool), h: Hyp| match next.get(&key) {
            Some(old) if old.score >= h.score => {}
            _ => {
                next.insert(key, h);
            }
        };
        for ((labels, blank_last), h) in &beams {
            let mut b = h.clone();
            b.score += row[blank] as f64;
            offer((labels.clone(), true), b);
            let last = labels.last().copied();
            if let (Some(l), false) = (last, *blank_last) {
                let mut cont = h.clone();
                cont.score += row[l as usize] as f64;
                if let Some(s) = cont.spans.last_mut() {
                    s.end = t + 1;
                }
                offer((labels.clone(), false), cont);
            }
            let last_pair = last.and_then(&pair_of);
            for &(c, (first, _)) in &cands {
                if last == Some(c) && !*blank_last {
                    continue; // that is the continuation above
                }
                if last_pair.is_some_and(|(_, second)| second != first) {
                    continue; // neighbouring pairs must share a phoneme
                }
                let mut n = h.clone();
                n.score += row[c as usize] as f64;
                n.labels.push(c);
                n.spans.push(Span { start: t, end: t + 1 });
                offer((n.labels.clone(), false), n);
            }
        }
        let mut scored: Vec<((Vec<u32>, bool), Hyp)> = next.into_iter().collect();
        scored.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.0.cmp(&b.0)));
        scored.truncate(width);
        beams = scored;
    }
    let best = beams
        .into_iter()
        .map(|(_, h)| h)
        .filter(|h| !h.labels.is_empty())
        .max_by(|a, b| a.score.total_cmp(&b.score).then(b.labels.cmp(&a.labels)))
        .ok_or(AlignError::Empty { item: 0, what: "decoded pairs" })?;
    Ok(PairDecoding {
        labels: best.labels,
        alignment: CtcAlignment { states: vec![0; frames], spans: best.spans, score: best.score as f32 },
    })
}
