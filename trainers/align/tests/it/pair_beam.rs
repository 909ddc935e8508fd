//! The §3.2 boundary decoder: chained pairs only, exact spans on peaked
//! posteriors, the best constrained path on small inputs (brute force),
//! typed errors.

use dv_align::{constrained_pair_beam, phone_timing, AlignError};

use super::rng::SplitMix64;

/// Classes: 0 blank, then pair k = 1 + a·P + b over P phonemes.
fn pair_of(p: u16) -> impl Fn(u32) -> Option<(u16, u16)> {
    move |c| if c == 0 { None } else { Some((((c - 1) / p as u32) as u16, ((c - 1) % p as u32) as u16)) }
}

fn class(p: u16, a: u16, b: u16) -> usize {
    1 + (a * p + b) as usize
}

#[test]
fn peaked_posteriors_give_the_chain_and_its_spans() {
    let p = 3;
    let classes = 1 + 9;
    let path = [
        class(p, 0, 1),
        class(p, 0, 1),
        class(p, 0, 1),
        0,
        class(p, 1, 2),
        class(p, 1, 2),
        class(p, 2, 0),
        class(p, 2, 0),
        class(p, 2, 0),
    ];
    let mut lp = vec![-8.0f32; path.len() * classes];
    for (t, &c) in path.iter().enumerate() {
        lp[t * classes + c] = -0.01;
    }
    let d = constrained_pair_beam(&lp, path.len(), classes, 0, pair_of(p), 50, 16).unwrap();
    assert_eq!(d.labels, vec![class(p, 0, 1) as u32, class(p, 1, 2) as u32, class(p, 2, 0) as u32]);
    let spans: Vec<(usize, usize)> = d.alignment.spans.iter().map(|s| (s.start, s.end)).collect();
    assert_eq!(spans, vec![(0, 3), (4, 6), (6, 9)]);
    // Four phonemes (0 1 2 0) with boundaries inside the pair spans.
    let timing = phone_timing(&d.alignment, 0.01, 0.09).unwrap();
    assert_eq!(timing.phones.len(), 4);
}

#[test]
fn neighbouring_pairs_always_share_a_phoneme() {
    let mut rng = SplitMix64::new(9);
    let p = 4u16;
    let classes = 1 + 16;
    for _ in 0..40 {
        let frames = 5 + rng.range(0, 20);
        let lp: Vec<f32> = (0..frames * classes).map(|_| -((rng.next_u64() % 1000) as f32) / 200.0).collect();
        let d = constrained_pair_beam(&lp, frames, classes, 0, pair_of(p), 8, 5).unwrap();
        let f = pair_of(p);
        for w in d.labels.windows(2) {
            assert_eq!(f(w[0]).unwrap().1, f(w[1]).unwrap().0, "{:?} then {:?}", f(w[0]), f(w[1]));
        }
        assert_eq!(d.labels.len(), d.alignment.spans.len());
        assert!(d.alignment.spans.windows(2).all(|w| w[0].end <= w[1].start));
    }
}

#[test]
fn a_wide_beam_finds_the_best_constrained_path() {
    let mut rng = SplitMix64::new(4);
    let p = 2u16;
    let classes: usize = 1 + 4;
    let f = pair_of(p);
    for case in 0..25 {
        let frames = 1 + case % 5;
        let lp: Vec<f32> = (0..frames * classes).map(|_| -((rng.next_u64() % 1000) as f32) / 250.0).collect();
        // Brute force: every path whose collapsed labels are a non-empty chain.
        let mut best = f64::NEG_INFINITY;
        for mut code in 0..classes.pow(frames as u32) {
            let (mut labels, mut prev, mut score) = (Vec::new(), None, 0.0);
            for t in 0..frames {
                let c = code % classes;
                code /= classes;
                score += lp[t * classes + c] as f64;
                if c != 0 && Some(c) != prev {
                    labels.push(c as u32);
                }
                prev = Some(c);
            }
            let chained = labels.windows(2).all(|w| f(w[0]).unwrap().1 == f(w[1]).unwrap().0);
            if !labels.is_empty() && chained {
                best = best.max(score);
            }
        }
        let d = constrained_pair_beam(&lp, frames, classes, 0, pair_of(p), 10_000, classes).unwrap();
        assert!((d.alignment.score as f64 - best).abs() < 1e-4, "case {case}: {} vs {best}", d.alignment.score);
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    let f = pair_of(2);
    assert!(matches!(constrained_pair_beam(&[0.0; 4], 1, 5, 0, &f, 4, 2), Err(AlignError::ShapeMismatch { .. })));
    assert!(matches!(constrained_pair_beam(&[0.0; 5], 1, 5, 0, &f, 0, 2), Err(AlignError::Empty { .. })));
    let mut nan = vec![0.0f32; 10];
    nan[7] = f32::NAN;
    assert!(matches!(
        constrained_pair_beam(&nan, 2, 5, 0, &f, 4, 2),
        Err(AlignError::NonFinite { row: 1, col: 2, .. })
    ));
}
