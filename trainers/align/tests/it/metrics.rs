use dv_align::{AlignError, BoundaryErrors, PhoneInterval};

/// Contiguous phones with these internal boundaries, from 0 to `end`.
fn phones(bounds: &[f64], end: f64) -> Vec<PhoneInterval> {
    let mut edges = vec![0.0];
    edges.extend_from_slice(bounds);
    edges.push(end);
    edges.windows(2).map(|w| PhoneInterval { start: w[0], end: w[1] }).collect()
}

#[test]
fn known_shifts_give_known_errors() {
    let mut m = BoundaryErrors::new();
    assert_eq!(m.summary(), None);
    // Shifts of +5, -15 and +30 ms on three boundaries.
    let reference = phones(&[0.1, 0.25, 0.4], 0.6);
    let pred = phones(&[0.105, 0.235, 0.43], 0.6);
    m.add(&pred, &reference).unwrap();
    let s = m.summary().unwrap();
    assert_eq!((s.utterances, s.boundaries), (1, 3));
    assert!((s.mean_abs_ms - 50.0 / 3.0).abs() < 1e-9, "{}", s.mean_abs_ms);
    assert!((s.mean_signed_ms - 20.0 / 3.0).abs() < 1e-9, "{}", s.mean_signed_ms);
    assert!((s.max_abs_ms - 30.0).abs() < 1e-9);
    assert_eq!((s.within_10ms, s.within_20ms, s.within_25ms), (1.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0));

    // A second utterance, exact and 25 ms late: the tolerances are inclusive
    // and errors are pooled over boundaries.
    m.add(&phones(&[0.2, 0.525], 0.9), &phones(&[0.2, 0.5], 0.9)).unwrap();
    let s = m.summary().unwrap();
    assert_eq!((s.utterances, s.boundaries), (2, 5));
    assert!((s.mean_abs_ms - 15.0).abs() < 1e-9, "{}", s.mean_abs_ms);
    assert!((s.mean_signed_ms - 9.0).abs() < 1e-9, "(5 - 15 + 30 + 0 + 25) / 5: {}", s.mean_signed_ms);
    assert_eq!((s.within_10ms, s.within_20ms, s.within_25ms), (2.0 / 5.0, 3.0 / 5.0, 4.0 / 5.0));
}

#[test]
fn a_gap_counts_at_its_middle_and_the_ends_are_not_boundaries() {
    // Reference with a pause between phones 0 and 1: boundary at 0.15.
    let reference = [
        PhoneInterval { start: 0.0, end: 0.1 },
        PhoneInterval { start: 0.2, end: 0.3 },
        PhoneInterval { start: 0.3, end: 0.5 },
    ];
    // The prediction's utterance ends differ; they are not compared.
    let pred = phones(&[0.15, 0.31], 0.7);
    let mut m = BoundaryErrors::new();
    m.add(&pred, &reference).unwrap();
    let s = m.summary().unwrap();
    assert_eq!(s.boundaries, 2);
    assert!((s.mean_abs_ms - 5.0).abs() < 1e-9, "{}", s.mean_abs_ms);
    assert_eq!(s.within_10ms, 1.0);
}

#[test]
fn mismatched_or_bad_inputs_are_errors_and_add_nothing() {
    let mut m = BoundaryErrors::new();
    m.add(&phones(&[0.1], 0.2), &phones(&[0.12], 0.2)).unwrap();
    let before = m.clone();
    assert_eq!(
        m.add(&phones(&[0.1, 0.15], 0.2), &phones(&[0.1], 0.2)),
        Err(AlignError::PhoneCountMismatch { predicted: 3, reference: 2 })
    );
    assert!(matches!(m.add(&phones(&[f64::NAN], 0.2), &phones(&[0.1], 0.2)), Err(AlignError::InvalidValue { .. })));
    assert_eq!(m, before);
    // One phone each: an utterance with no internal boundary.
    m.add(&phones(&[], 0.2), &phones(&[], 0.3)).unwrap();
    let s = m.summary().unwrap();
    assert_eq!((s.utterances, s.boundaries), (2, 1));
    assert!((s.mean_abs_ms - 20.0).abs() < 1e-9);
}
