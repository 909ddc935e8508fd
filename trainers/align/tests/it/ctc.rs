use dv_align::{ctc_viterbi, ctc_viterbi_batch, AlignError, CtcAlignment, CtcLen, CtcShape, Span};

use crate::rng::SplitMix64;

fn ext(labels: &[u32], blank: u32, j: usize) -> u32 {
    if j % 2 == 1 {
        labels[j / 2]
    } else {
        blank
    }
}

fn can_step(labels: &[u32], blank: u32, from: usize, to: usize) -> bool {
    to == from
        || to == from + 1
        || (to == from + 2 && to % 2 == 1 && ext(labels, blank, to) != ext(labels, blank, from))
}

/// Every admissible CTC state path of `frames` frames.
fn all_paths(frames: usize, labels: &[u32], blank: u32) -> Vec<Vec<i32>> {
    let n = 2 * labels.len() + 1;
    let mut out = Vec::new();
    let mut stack: Vec<Vec<usize>> = (0..n.min(2)).map(|j| vec![j]).collect();
    while let Some(p) = stack.pop() {
        let last = *p.last().unwrap();
        if p.len() == frames {
            if last + 2 >= n {
                out.push(p.iter().map(|&j| j as i32).collect());
            }
            continue;
        }
        for to in last..(last + 3).min(n) {
            if can_step(labels, blank, last, to) {
                let mut q = p.clone();
                q.push(to);
                stack.push(q);
            }
        }
    }
    out
}

/// A state path's score in the DP's order: lp[y] + (lp[y-1] + (... + (lp[0] + 0))).
fn score(lp: &[f32], classes: usize, labels: &[u32], blank: u32, states: &[i32]) -> f32 {
    let mut acc = 0.0f32;
    for (y, &j) in states.iter().enumerate() {
        // IEEE addition is commutative, so this is the DP's `lp + best` bit for bit.
        acc += lp[y * classes + ext(labels, blank, j as usize) as usize];
    }
    acc
}

/// The structural invariants of an alignment.
fn check_structure(a: &CtcAlignment, labels: &[u32], blank: u32) {
    let n = 2 * labels.len() + 1;
    let st: Vec<usize> = a.states.iter().map(|&j| j as usize).collect();
    assert!(st[0] <= 1, "starts in {}", st[0]);
    assert!(st.last().unwrap() + 2 >= n, "ends in {} of {n}", st.last().unwrap());
    assert!(st.windows(2).all(|w| w[1] >= w[0] && can_step(labels, blank, w[0], w[1])), "{st:?}");
    assert_eq!(a.spans.len(), labels.len());
    for (k, sp) in a.spans.iter().enumerate() {
        assert!(sp.start < sp.end, "label {k}: {sp:?}");
        assert!(st[sp.start..sp.end].iter().all(|&j| j == 2 * k + 1), "label {k} span not contiguous");
        assert_eq!(st.iter().filter(|&&j| j == 2 * k + 1).count(), sp.end - sp.start);
        if k > 0 {
            assert!(a.spans[k - 1].end <= sp.start, "spans overlap or go back");
        }
    }
}

#[test]
fn enumerator_counts_match_hand_counts() {
    // One label in two frames: (0,1) (1,1) (1,2).
    assert_eq!(all_paths(2, &[1], 0).len(), 3);
    // Two equal labels in three frames: only 1,2,3.
    assert_eq!(all_paths(3, &[1, 1], 0), vec![vec![1, 2, 3]]);
    // No labels: all blank.
    assert_eq!(all_paths(4, &[], 0), vec![vec![0; 4]]);
}

#[test]
fn matches_brute_force() {
    let mut rng = SplitMix64::new(17);
    for case in 0..400 {
        let classes = rng.range(2, 4);
        let blank = rng.range(0, classes - 1) as u32;
        let l = rng.range(0, 3);
        let labels: Vec<u32> = (0..l)
            .map(|_| loop {
                let c = rng.range(0, classes - 1) as u32;
                if c != blank {
                    break c;
                }
            })
            .collect();
        let repeats = labels.windows(2).filter(|w| w[0] == w[1]).count();
        let frames = rng.range((l + repeats).max(1), 7);
        let lp: Vec<f32> =
            (0..frames * classes).map(|_| if case % 2 == 0 { rng.log_like() } else { rng.int(2) }).collect();
        let paths = all_paths(frames, &labels, blank);
        assert!(!paths.is_empty());
        let best = paths.iter().map(|p| score(&lp, classes, &labels, blank, p)).fold(f32::NEG_INFINITY, f32::max);
        let a = ctc_viterbi(&lp, frames, classes, &labels, blank as usize).unwrap();
        assert_eq!(a.score, best, "case {case}: labels {labels:?} frames {frames}");
        assert_eq!(score(&lp, classes, &labels, blank, &a.states), best, "case {case}: not a best path");
        assert!(paths.contains(&a.states), "case {case}: {:?} is not admissible", a.states);
        check_structure(&a, &labels, blank);
    }
}

#[test]
fn ties_prefer_staying_and_the_last_label() {
    // All paths tie: the end is the last label, and the backtrack stays, so the
    // label takes every frame.
    let a = ctc_viterbi(&[0.0f32; 6], 3, 2, &[1], 0).unwrap();
    assert_eq!(a.states, vec![1, 1, 1]);
    assert_eq!(a.spans, vec![Span { start: 0, end: 3 }]);
    // Two labels, all ties: staying is preferred from the end backwards, so
    // the second label holds on and the first keeps only frame 0.
    let a = ctc_viterbi(&[0.0f32; 12], 4, 3, &[1, 2], 0).unwrap();
    assert_eq!(a.states, vec![1, 3, 3, 3]);
    assert_eq!(a.spans, vec![Span { start: 0, end: 1 }, Span { start: 1, end: 4 }]);
    // The final blank wins when strictly better.
    #[rustfmt::skip]
    let lp = [
        -1.0f32, 0.0,   // frame 0: label
        0.0, -1.0,      // frame 1: blank
    ];
    let a = ctc_viterbi(&lp, 2, 2, &[1], 0).unwrap();
    assert_eq!(a.states, vec![1, 2]);
    assert_eq!(a.score, 0.0);
}

#[test]
fn repeated_labels_need_a_blank_between() {
    // [a, a] in 3 frames: a, blank, a, whatever the scores say.
    #[rustfmt::skip]
    let lp = [
        -9.0f32, 0.0,
        -9.0, 0.0,
        -9.0, 0.0,
    ];
    let a = ctc_viterbi(&lp, 3, 2, &[1, 1], 0).unwrap();
    assert_eq!(a.states, vec![1, 2, 3]);
    assert_eq!(a.score, -9.0);
    assert_eq!(a.spans, vec![Span { start: 0, end: 1 }, Span { start: 2, end: 3 }]);
}

#[test]
fn spans_are_contiguous_and_ordered_on_long_inputs() {
    let mut rng = SplitMix64::new(23);
    for _ in 0..30 {
        let classes = rng.range(3, 40);
        let l = rng.range(1, 30);
        let labels: Vec<u32> = (0..l).map(|_| rng.range(1, classes - 1) as u32).collect();
        let repeats = labels.windows(2).filter(|w| w[0] == w[1]).count();
        let frames = rng.range(l + repeats, 4 * l + 10);
        let lp: Vec<f32> = (0..frames * classes).map(|_| rng.log_like()).collect();
        let a = ctc_viterbi(&lp, frames, classes, &labels, 0).unwrap();
        check_structure(&a, &labels, 0);
        assert_eq!(score(&lp, classes, &labels, 0, &a.states), a.score);
    }
}

#[test]
fn batch_with_variable_lengths_matches_single_items() {
    let mut rng = SplitMix64::new(29);
    let shape = CtcShape { batch: 4, frames: 12, classes: 5, labels: 4 };
    let lens = [
        CtcLen { frames: 12, labels: 4 },
        CtcLen { frames: 1, labels: 1 },
        CtcLen { frames: 7, labels: 0 },
        CtcLen { frames: 5, labels: 3 },
    ];
    let mut lp = vec![f32::NAN; 4 * 12 * 5];
    let mut labels = vec![99u32; 16];
    let mut singles = Vec::new();
    for (i, l) in lens.iter().enumerate() {
        let item: Vec<f32> = (0..l.frames * 5).map(|_| rng.int(3)).collect();
        lp[i * 60..i * 60 + l.frames * 5].copy_from_slice(&item);
        let lab: Vec<u32> = (0..l.labels).map(|k| 1 + ((i + 3 * k) % 4) as u32).collect();
        labels[i * 4..i * 4 + l.labels].copy_from_slice(&lab);
        singles.push(ctc_viterbi(&item, l.frames, 5, &lab, 0).unwrap());
    }
    let batch = ctc_viterbi_batch(&lp, shape, &labels, &lens, 0).unwrap();
    assert_eq!(batch, singles);
    assert_eq!(batch[2].states, vec![0; 7]);
    assert!(batch[2].spans.is_empty());
}

#[test]
fn errors_are_typed() {
    let lp = vec![-1.0f32; 2 * 3];
    assert_eq!(
        ctc_viterbi(&lp, 2, 3, &[1, 1], 0).unwrap_err(),
        AlignError::SequenceTooLong { item: 0, frames: 2, labels: 2, repeats: 1, needed: 3 }
    );
    assert_eq!(
        ctc_viterbi(&lp, 2, 3, &[1, 2, 1], 0).unwrap_err(),
        AlignError::SequenceTooLong { item: 0, frames: 2, labels: 3, repeats: 0, needed: 3 }
    );
    assert!(ctc_viterbi(&lp, 2, 3, &[1, 2], 0).is_ok());
    assert_eq!(
        ctc_viterbi(&lp, 2, 3, &[1, 0], 0).unwrap_err(),
        AlignError::InvalidLabel { item: 0, position: 1, label: 0, classes: 3, blank: 0 }
    );
    assert_eq!(
        ctc_viterbi(&lp, 2, 3, &[3], 0).unwrap_err(),
        AlignError::InvalidLabel { item: 0, position: 0, label: 3, classes: 3, blank: 0 }
    );
    assert_eq!(ctc_viterbi(&lp, 2, 3, &[1], 3).unwrap_err(), AlignError::BlankOutOfRange { blank: 3, classes: 3 });
    assert_eq!(
        ctc_viterbi(&lp, 3, 3, &[1], 0).unwrap_err(),
        AlignError::ShapeMismatch { what: "CTC log-probs [batch, frames, classes]", expected: 9, got: 6 }
    );
    assert_eq!(ctc_viterbi(&[], 0, 3, &[], 0).unwrap_err(), AlignError::Empty { item: 0, what: "frames" });
    let mut bad = lp.clone();
    bad[4] = f32::NAN;
    assert_eq!(ctc_viterbi(&bad, 2, 3, &[1], 0).unwrap_err(), AlignError::NonFinite { item: 0, row: 1, col: 1 });
    bad[4] = f32::INFINITY;
    assert_eq!(ctc_viterbi(&bad, 2, 3, &[1], 0).unwrap_err(), AlignError::NonFinite { item: 0, row: 1, col: 1 });
    // Label 2 has probability zero everywhere: no admissible path.
    let mut zero = lp.clone();
    zero[2] = f32::NEG_INFINITY;
    zero[5] = f32::NEG_INFINITY;
    assert_eq!(ctc_viterbi(&zero, 2, 3, &[1, 2], 0).unwrap_err(), AlignError::NoPath { item: 0 });
    // ... but -inf elsewhere is fine.
    zero[5] = -1.0;
    assert_eq!(ctc_viterbi(&zero, 2, 3, &[1, 2], 0).unwrap().states, vec![1, 3]);
    let shape = CtcShape { batch: 2, frames: 2, classes: 3, labels: 1 };
    assert_eq!(
        ctc_viterbi_batch(
            &[0.0; 12],
            shape,
            &[1, 1],
            &[CtcLen { frames: 2, labels: 2 }, CtcLen { frames: 2, labels: 1 }],
            0
        )
        .unwrap_err(),
        AlignError::LengthExceedsPadding { item: 0, what: "labels", len: 2, max: 1 }
    );
    assert_eq!(
        ctc_viterbi_batch(&[0.0; 12], shape, &[1], &[CtcLen { frames: 2, labels: 1 }; 2], 0).unwrap_err(),
        AlignError::ShapeMismatch { what: "CTC labels [batch, labels]", expected: 2, got: 1 }
    );
}
