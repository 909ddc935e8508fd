//! CTC prefix beam search against brute force: on small inputs with a beam
//! wide enough to keep every prefix, the best label sequence and its
//! probability (summed over all its paths) are exact; narrow beams return a
//! sequence that is no more probable; errors are typed.

use dv_align::{ctc_prefix_beam, edit_distance, AlignError};

use super::rng::SplitMix64;

/// log-softmax rows of random logits.
fn random_log_probs(rng: &mut SplitMix64, frames: usize, classes: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(frames * classes);
    for _ in 0..frames {
        let logits: Vec<f64> = (0..classes).map(|_| (rng.next_u64() % 1000) as f64 / 250.0).collect();
        let m = logits.iter().cloned().fold(f64::MIN, f64::max);
        let z = logits.iter().map(|l| (l - m).exp()).sum::<f64>().ln() + m;
        out.extend(logits.iter().map(|l| (l - z) as f32));
    }
    out
}

/// Every path, collapsed (merge repeats, drop blanks), probabilities summed.
fn brute_force(lp: &[f32], frames: usize, classes: usize, blank: usize) -> std::collections::HashMap<Vec<u32>, f64> {
    let mut totals = std::collections::HashMap::new();
    let paths = classes.pow(frames as u32);
    for mut code in 0..paths {
        let mut path = Vec::with_capacity(frames);
        let mut logp = 0.0;
        for t in 0..frames {
            let c = code % classes;
            code /= classes;
            path.push(c);
            logp += lp[t * classes + c] as f64;
        }
        let mut labels = Vec::new();
        let mut prev = None;
        for &c in &path {
            if Some(c) != prev && c != blank {
                labels.push(c as u32);
            }
            prev = Some(c);
        }
        *totals.entry(labels).or_insert(0.0) += logp.exp();
    }
    totals
}

#[test]
fn a_wide_beam_is_exact_and_a_narrow_one_is_no_better() {
    let mut rng = SplitMix64::new(5);
    for case in 0..30 {
        let frames = 1 + case % 5;
        let classes = 2 + case % 3;
        let lp = random_log_probs(&mut rng, frames, classes);
        let totals = brute_force(&lp, frames, classes, 0);
        let (best_seq, best_p) = totals.iter().max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0))).unwrap();
        let (got, got_lp) = ctc_prefix_beam(&lp, frames, classes, 0, 10_000, classes).unwrap();
        assert!((got_lp.exp() - best_p).abs() < 1e-9, "case {case}: {} vs {best_p}", got_lp.exp());
        assert!((totals[&got] - best_p).abs() < 1e-9, "case {case}: {got:?} is not a best sequence ({best_seq:?})");
        let (narrow, narrow_lp) = ctc_prefix_beam(&lp, frames, classes, 0, 1, 1).unwrap();
        assert!(narrow_lp <= got_lp + 1e-12, "case {case}: a width-1 beam beat the exhaustive one");
        // A pruned beam's score sums only the paths it kept: never above the sequence's total.
        assert!(narrow_lp <= totals[&narrow].ln() + 1e-9, "case {case}: {narrow_lp} above the sequence's probability");
    }
}

#[test]
fn a_peaked_posterior_decodes_its_labels_including_repeats() {
    // Frames: 3, 3, blank, 3, 5, 5 → labels 3 3 5 (blank separates the repeated 3).
    let classes = 7;
    let seq = [3usize, 3, 0, 3, 5, 5];
    let mut lp = vec![0.0f32; seq.len() * classes];
    for (t, &c) in seq.iter().enumerate() {
        for k in 0..classes {
            lp[t * classes + k] = if k == c { -0.001 } else { -9.0 };
        }
    }
    let (got, _) = ctc_prefix_beam(&lp, seq.len(), classes, 0, 8, 4).unwrap();
    assert_eq!(got, vec![3, 3, 5]);
    assert_eq!(edit_distance(&got, &[3, 5]), 1);
}

#[test]
fn bad_inputs_are_typed_errors() {
    assert!(matches!(ctc_prefix_beam(&[0.0; 5], 2, 3, 0, 4, 2), Err(AlignError::ShapeMismatch { .. })));
    assert!(matches!(ctc_prefix_beam(&[0.0; 6], 2, 3, 3, 4, 2), Err(AlignError::InvalidLabel { .. })));
    assert!(matches!(ctc_prefix_beam(&[0.0; 6], 2, 3, 0, 0, 2), Err(AlignError::Empty { .. })));
    let mut nan = vec![0.0f32; 6];
    nan[4] = f32::NAN;
    assert!(matches!(ctc_prefix_beam(&nan, 2, 3, 0, 4, 2), Err(AlignError::NonFinite { row: 1, col: 1, .. })));
}
