//! CTC prefix beam search (Graves 2012; Hannun et al. 2014): the most
//! probable label sequence under the CTC collapse, summing over the paths
//! that spell each prefix, for the phoneme-pair error rate of Deep Voice
//! §3.2 (PPER). Log space, exact sums (log-add-exp) within the beam.
//!
//! At each frame only the `prune` most likely non-blank classes extend a
//! prefix (the rest are ~0 in a trained model); `width` prefixes survive.
//! `prune = classes` and a width covering every prefix is exhaustive, which
//! the tests check against brute-force enumeration on small inputs.

use std::collections::HashMap;

use crate::AlignError;

fn lse(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// The best label sequence of one utterance's frame log-probabilities
/// `[frames, classes]` (row-major) and its log-probability.
pub fn ctc_prefix_beam(
    log_probs: &[f32],
    frames: usize,
    classes: usize,
    blank: usize,
    width: usize,
    prune: usize,
) -> Result<(Vec<u32>, f64), AlignError> {
    if log_probs.len() != frames * classes {
        return Err(AlignError::ShapeMismatch {
            what: "CTC beam log-probabilities",
            expected: frames * classes,
            got: log_probs.len(),
        });
    }
    if blank >= classes {
        return Err(AlignError::InvalidLabel { item: 0, position: 0, label: blank as i64, classes, blank });
    }
    if width == 0 || prune == 0 {
        return Err(AlignError::Empty { item: 0, what: "beam width or prune" });
    }
    // prefix → (log P ending in blank, log P ending in a label)
    let mut beams: HashMap<Vec<u32>, (f64, f64)> = HashMap::from([(Vec::new(), (0.0, f64::NEG_INFINITY))]);
    let mut order: Vec<usize> = (0..classes).collect();
    for t in 0..frames {
        let row = &log_probs[t * classes..(t + 1) * classes];
        if let Some((c, v)) = row.iter().enumerate().find(|(_, v)| v.is_nan() || **v == f32::INFINITY) {
            let _ = v;
            return Err(AlignError::NonFinite { item: 0, row: t, col: c });
        }
        order.sort_unstable_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
        let cands: Vec<usize> = order.iter().copied().filter(|&c| c != blank).take(prune).collect();
        let pb_blank = row[blank] as f64;
        let mut next: HashMap<Vec<u32>, (f64, f64)> = HashMap::with_capacity(beams.len() * (cands.len() + 1));
        for (prefix, &(pb, pnb)) in &beams {
            let total = lse(pb, pnb);
            let e = next.entry(prefix.clone()).or_insert((f64::NEG_INFINITY, f64::NEG_INFINITY));
            e.0 = lse(e.0, total + pb_blank);
            let last = prefix.last().copied();
            for &c in &cands {
                let p = row[c] as f64;
                if p == f64::NEG_INFINITY {
                    continue;
                }
                if last == Some(c as u32) {
                    // The same label again only after a blank; without one it collapses.
                    let e = next.entry(prefix.clone()).or_insert((f64::NEG_INFINITY, f64::NEG_INFINITY));
                    e.1 = lse(e.1, pnb + p);
                    let mut longer = prefix.clone();
                    longer.push(c as u32);
                    let e = next.entry(longer).or_insert((f64::NEG_INFINITY, f64::NEG_INFINITY));
                    e.1 = lse(e.1, pb + p);
                } else {
                    let mut longer = prefix.clone();
                    longer.push(c as u32);
                    let e = next.entry(longer).or_insert((f64::NEG_INFINITY, f64::NEG_INFINITY));
                    e.1 = lse(e.1, total + p);
                }
            }
        }
        let mut scored: Vec<(Vec<u32>, (f64, f64))> = next.into_iter().collect();
        // Best first; ties by the prefix itself so results never depend on hashing.
        scored.sort_by(|a, b| lse(b.1 .0, b.1 .1).total_cmp(&lse(a.1 .0, a.1 .1)).then(a.0.cmp(&b.0)));
        scored.truncate(width);
        beams = scored.into_iter().collect();
    }
    let best = beams
        .into_iter()
        .map(|(p, (b, nb))| (p, lse(b, nb)))
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
        .unwrap_or((Vec::new(), f64::NEG_INFINITY));
    Ok(best)
}

/// Levenshtein distance between two sequences (PPER, PER).
pub fn edit_distance<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(x != y)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
