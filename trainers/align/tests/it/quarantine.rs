use dv_align::{quarantine, quarantine_by_group, AlignError, DEFAULT_K, MAD_SCALE};

use crate::rng::SplitMix64;

/// 300 utterances with confidences around -1.2 nats per frame.
fn corpus(rng: &mut SplitMix64) -> Vec<(String, f64)> {
    (0..300).map(|i| (format!("utt{i:03}"), -1.2 + 0.1 * (rng.unit() as f64 - 0.5))).collect()
}

#[test]
fn picks_the_planted_outliers_lowest_first() {
    let mut rng = SplitMix64::new(42);
    let mut c = corpus(&mut rng);
    c[17].1 = -4.0; // a wrong transcript
    c[230].1 = -2.5; // clipped audio
    c[99].1 = -0.2; // far above the median: not a failure
    c[150].1 = -1.35; // a little low, within the spread
    let q = quarantine(&c, DEFAULT_K).unwrap();
    assert_eq!(q.ids, ["utt017", "utt230"]);
    assert!((q.median + 1.2).abs() < 0.01, "{}", q.median);
    // Uniform on a 0.1 span: MAD = 0.025, scaled about 0.037.
    assert!((q.spread - MAD_SCALE * 0.025).abs() < 0.004, "{}", q.spread);
    assert!((q.threshold - (q.median - DEFAULT_K * q.spread)).abs() < 1e-12);
    // A smaller k reaches the mild one too, still lowest first.
    let q = quarantine(&c, 3.0).unwrap();
    assert_eq!(q.ids, ["utt017", "utt230", "utt150"]);
}

#[test]
fn a_clean_corpus_quarantines_nothing() {
    let mut rng = SplitMix64::new(9);
    let c = corpus(&mut rng);
    assert!(quarantine(&c, DEFAULT_K).unwrap().ids.is_empty());
    // With k = 0 everything below the median goes: half the corpus.
    assert_eq!(quarantine(&c, 0.0).unwrap().ids.len(), 150);
}

#[test]
fn zero_mad_falls_back_to_the_mean_deviation() {
    // MAD is 0; a tiny dip is not "far below".
    let c = [(0, -1.0), (1, -1.0), (2, -1.0), (3, -1.0001)];
    assert!(quarantine(&c, DEFAULT_K).unwrap().ids.is_empty());
    // A big one is, once the corpus outnumbers 1.2533 k (the outlier is
    // part of the mean deviation): not among 6, found among 7.
    let mut c: Vec<(usize, f64)> = (0..6).map(|i| (i, -1.0)).collect();
    c[5].1 = -9.0;
    assert!(quarantine(&c, DEFAULT_K).unwrap().ids.is_empty());
    c.push((6, -1.0));
    assert_eq!(quarantine(&c, DEFAULT_K).unwrap().ids, [5]);
    // All equal: nothing.
    assert!(quarantine(&[(0, -1.0), (1, -1.0)], DEFAULT_K).unwrap().ids.is_empty());
}

#[test]
fn bad_inputs_are_typed_errors() {
    assert_eq!(quarantine::<u32>(&[], DEFAULT_K), Err(AlignError::Empty { item: 0, what: "confidences" }));
    assert!(matches!(quarantine(&[(0, -1.0), (1, f64::NAN)], DEFAULT_K), Err(AlignError::InvalidValue { .. })));
    assert!(matches!(quarantine(&[(0, -1.0)], -1.0), Err(AlignError::InvalidValue { value, .. }) if value == -1.0));
}

#[test]
fn held_out_utterances_are_judged_against_each_other() {
    // A segmentation model's training utterances around -1.2, the 5 % its run held out around
    // -1.6 (it is less sure of unseen audio), one of them a clear failure.
    let mut rng = SplitMix64::new(7);
    let mut c = corpus(&mut rng);
    let held = |id: &String| id.ends_with('0') && id.as_str() < "utt150";
    for (id, v) in c.iter_mut() {
        if held(id) {
            *v -= 0.4;
        }
    }
    c[40].1 = -4.0;
    // One threshold for both sets aside every held-out utterance.
    assert_eq!(quarantine(&c, DEFAULT_K).unwrap().ids.len(), 15);
    let (q, h) = quarantine_by_group(&c, held, DEFAULT_K).unwrap();
    assert_eq!(q.ids, ["utt040"], "only the failure");
    let h = h.expect("both groups hold utterances");
    assert!((h.median + 1.6).abs() < 0.05, "{}", h.median);
    assert!((q.median + 1.2).abs() < 0.01, "{}", q.median);
    // No held-out group: the same as one quarantine.
    let (all, none) = quarantine_by_group(&c, |_| false, DEFAULT_K).unwrap();
    assert_eq!((all, none), (quarantine(&c, DEFAULT_K).unwrap(), None));
}
