use dv_align::{
    clamp_edge_pauses, confine_labels, ctc_viterbi, inner_within, phone_timing, speech_extent, speech_frames,
    AlignError, CtcAlignment, PhoneInterval, PhoneTiming, Span, CONFINE_PENALTY,
};

use crate::rng::SplitMix64;

/// An alignment of `frames` frames with the given pair spans (the states are
/// not read by `phone_timing`, only their count).
fn alignment(frames: usize, spans: &[(usize, usize)], score: f32) -> CtcAlignment {
    CtcAlignment {
        states: vec![0; frames],
        spans: spans.iter().map(|&(start, end)| Span { start, end }).collect(),
        score,
    }
}

/// The guarantees of the module docs, for any valid input.
fn check_invariants(t: &PhoneTiming, spans: &[Span], step: f64, duration: f64) {
    assert_eq!(t.phones.len(), spans.len() + 1);
    assert_eq!(t.phones[0].start, 0.0);
    assert_eq!(t.phones.last().unwrap().end, duration);
    for p in &t.phones {
        assert!(p.start < p.end, "empty phone {p:?} in {:?}", t.phones);
    }
    for (k, w) in t.phones.windows(2).enumerate() {
        assert_eq!(w[0].end.to_bits(), w[1].start.to_bits(), "gap or overlap at boundary {k}");
        // The boundary lies inside its pair's span, in time (centred frames).
        let s = spans[k];
        let (from, to) = ((s.start as f64 - 0.5).max(0.0) * step, (s.end as f64 - 0.5) * step);
        assert!(w[0].end > from && w[0].end < to, "{k}: {s:?} -> {}", w[0].end);
    }
}

#[test]
fn hand_made_spans_give_midpoint_boundaries() {
    // `sil HH EH L sil`: 4 pairs over 20 frames of 10 ms.
    let a = alignment(20, &[(2, 3), (5, 8), (8, 9), (12, 14)], -10.0);
    let t = phone_timing(&a, 0.01, 0.2).unwrap();
    // Centred frames: a span's midpoint is (start + end - 1) / 2 frames.
    let want = [(0.0, 0.02), (0.02, 0.06), (0.06, 0.08), (0.08, 0.125), (0.125, 0.2)];
    assert_eq!(t.phones.len(), want.len());
    for (p, &(s, e)) in t.phones.iter().zip(&want) {
        assert!((p.start - s).abs() < 1e-12 && (p.end - e).abs() < 1e-12, "{p:?} != ({s}, {e})");
    }
    assert_eq!(t.confidence, -0.5);

    // With a step exact in binary every boundary is exact.
    let t = phone_timing(&a, 0.0625, 1.5).unwrap();
    let bounds: Vec<f64> = t.phones.iter().map(|p| p.end).collect();
    assert_eq!(bounds, [0.125, 0.375, 0.5, 0.78125, 1.5]);
    assert_eq!(t.phones[0], PhoneInterval { start: 0.0, end: 0.125 });
}

#[test]
fn a_pair_on_frame_zero_still_leaves_the_first_phone_a_duration() {
    let a = alignment(4, &[(0, 1), (1, 2), (3, 4)], -2.0);
    let t = phone_timing(&a, 0.01, 0.04).unwrap();
    // Frame 0 stands for [0, step / 2): the midpoint of [0, 0.005) is 0.0025.
    assert!((t.phones[0].end - 0.0025).abs() < 1e-15, "{:?}", t.phones[0]);
    check_invariants(&t, &a.spans, 0.01, 0.04);
    // No pairs: one phone over the whole utterance.
    let t = phone_timing(&alignment(3, &[], -1.5), 0.01, 0.03).unwrap();
    assert_eq!(t.phones, [PhoneInterval { start: 0.0, end: 0.03 }]);
    assert_eq!(t.confidence, -0.5);
}

#[test]
fn random_spans_give_monotone_contiguous_phones() {
    let mut rng = SplitMix64::new(0x5eed_b0d4);
    for _ in 0..2000 {
        let pairs = rng.range(0, 30);
        let mut spans = Vec::with_capacity(pairs);
        let mut y = 0;
        for _ in 0..pairs {
            let start = y + rng.range(0, 3); // gaps of blank, or none
            let end = start + rng.range(1, 4);
            spans.push((start, end));
            y = end;
        }
        let frames = y + rng.range(0, 3).max(usize::from(y == 0));
        let step = [0.01, 0.0125, 0.005][rng.range(0, 2)];
        // Anywhere after the last boundary, before or past `frames * step`.
        let last = spans.last().map_or(0.0, |&(s, e)| ((s as f64 - 0.5).max(0.0) + e as f64 - 0.5) * step / 2.0);
        let duration = last + step * (0.01 + 2.0 * rng.unit() as f64);
        let a = alignment(frames, &spans, -(rng.range(1, 1000) as f32));
        let t = phone_timing(&a, step, duration).unwrap();
        check_invariants(&t, &a.spans, step, duration);
        assert_eq!(t.confidence, a.score as f64 / frames as f64);
    }
}

#[test]
fn viterbi_on_phoneme_pairs_puts_boundaries_at_the_spikes() {
    // `sil HH EH L OW sil` -> 5 pairs, classes 1..=5, blank 0. Pair k fires
    // on frame `spike[k]`; elsewhere blank is likely.
    let spike = [7usize, 15, 22, 31, 44];
    let (frames, classes) = (52, 6);
    let mut rng = SplitMix64::new(7);
    let mut lp = vec![0f32; frames * classes];
    for y in 0..frames {
        for c in 0..classes {
            lp[y * classes + c] = if c == 0 { -0.1 } else { -6.0 - rng.unit() };
        }
    }
    for (k, &y) in spike.iter().enumerate() {
        lp[y * classes] = -6.0;
        lp[y * classes + k + 1] = -0.05;
    }
    let labels = [1u32, 2, 3, 4, 5];
    let a = ctc_viterbi(&lp, frames, classes, &labels, 0).unwrap();
    let t = phone_timing(&a, 0.01, 0.52).unwrap();
    check_invariants(&t, &a.spans, 0.01, 0.52);
    for (k, &y) in spike.iter().enumerate() {
        let want = y as f64 * 0.01; // the spike frame's centre
        assert!((t.phones[k].end - want).abs() < 1e-12, "boundary {k}: {} != {want}", t.phones[k].end);
    }
    assert_eq!(t.confidence, a.score as f64 / frames as f64);
    assert!(t.confidence < 0.0);
}

#[test]
fn bad_inputs_are_typed_errors() {
    let ok = [(2, 3), (5, 8)];
    let err =
        |frames, spans: &[(usize, usize)], score, step, dur| phone_timing(&alignment(frames, spans, score), step, dur);
    assert_eq!(err(0, &[], -1.0, 0.01, 0.1), Err(AlignError::Empty { item: 0, what: "frames" }));
    assert!(matches!(err(10, &ok, -1.0, 0.0, 0.1), Err(AlignError::InvalidValue { value, .. }) if value == 0.0));
    assert!(matches!(err(10, &ok, -1.0, 0.01, f64::NAN), Err(AlignError::InvalidValue { .. })));
    assert!(matches!(err(10, &ok, f32::NEG_INFINITY, 0.01, 0.1), Err(AlignError::InvalidValue { .. })));
    // A pair the path never visits (ctc's `usize::MAX` marker), an empty span.
    assert!(matches!(
        err(10, &[(2, 3), (usize::MAX, 0)], -1.0, 0.01, 0.1),
        Err(AlignError::InvalidSpan { index: 1, .. })
    ));
    assert!(matches!(err(10, &[(4, 4)], -1.0, 0.01, 0.1), Err(AlignError::InvalidSpan { index: 0, .. })));
    assert!(matches!(
        err(10, &[(2, 5), (4, 6)], -1.0, 0.01, 0.1),
        Err(AlignError::InvalidSpan { index: 1, start: 4, end: 6, .. })
    ));
    assert!(matches!(err(10, &[(2, 5), (8, 11)], -1.0, 0.01, 0.2), Err(AlignError::InvalidSpan { index: 1, .. })));
    // Last boundary at 0.06 s: a duration of 0.06 leaves the last phone empty.
    assert!(matches!(err(10, &ok, -1.0, 0.01, 0.06), Err(AlignError::BoundaryPastEnd { .. })));
    assert!(err(10, &ok, -1.0, 0.01, 0.0601).is_ok());
}

/// Users of other aligners hit "beam too narrow" on long files; the exact
/// Viterbi has no beam. A 60 s utterance (6,000 frames) of 700 phones, each
/// pair spiking on one frame: every boundary comes out at its spike.
#[test]
fn a_sixty_second_utterance_aligns_every_boundary() {
    let (frames, classes, pairs) = (6000usize, 41usize, 699usize);
    let mut rng = SplitMix64::new(60);
    // Pair labels 1..classes, never equal neighbours; spikes every ~8.5 frames.
    let mut labels: Vec<u32> = Vec::with_capacity(pairs);
    while labels.len() < pairs {
        let l = 1 + (rng.next_u64() % (classes as u64 - 1)) as u32;
        if labels.last() != Some(&l) {
            labels.push(l);
        }
    }
    let spike = |k: usize| 4 + k * (frames - 8) / pairs;
    let mut lp = vec![-12.0f32; frames * classes];
    for f in 0..frames {
        lp[f * classes] = -0.01; // blank
    }
    for (k, &l) in labels.iter().enumerate() {
        let f = spike(k);
        lp[f * classes] = -9.0;
        lp[f * classes + l as usize] = -0.02;
    }
    let a = ctc_viterbi(&lp, frames, classes, &labels, 0).unwrap();
    let t = phone_timing(&a, 0.01, 60.0).unwrap();
    assert_eq!(t.phones.len(), pairs + 1);
    for k in 0..pairs {
        let want = spike(k) as f64 * 0.01;
        assert!((t.phones[k].end - want).abs() < 1e-9, "boundary {k}: {} vs {want}", t.phones[k].end);
    }
    check_invariants(&t, &a.spans, 0.01, 60.0);
}

#[test]
fn speech_extent_is_the_first_and_last_frame_within_top_db_of_the_loudest() {
    // Silence at -80 dB, speech from frame 3 to frame 6, a -70 dB click at frame 8.
    let levels = [-80.0, -80.0, -79.0, -30.0, -20.0, -25.0, -40.0, -80.0, -70.0, f64::NEG_INFINITY];
    let (on, off) = speech_extent(&levels, 0.01, 45.0).unwrap();
    assert!((on - 0.025).abs() < 1e-12 && (off - 0.065).abs() < 1e-12, "{on} {off}");
    // 55 dB reaches the click.
    let (on, off) = speech_extent(&levels, 0.01, 55.0).unwrap();
    assert!((on - 0.025).abs() < 1e-12 && (off - 0.085).abs() < 1e-12, "{on} {off}");
    // Frame 0 starts at 0, not half a frame before.
    assert_eq!(speech_extent(&[-10.0, -80.0], 0.01, 45.0), Some((0.0, 0.005)));
    assert_eq!(speech_extent(&[f64::NEG_INFINITY, f64::NAN], 0.01, 45.0), None);
    assert_eq!(speech_extent(&[], 0.01, 45.0), None);
}

#[test]
fn edge_pauses_move_only_inside_the_pause_and_keep_every_phone() {
    let phones = |b: &[f64]| {
        let mut e = vec![0.0];
        e.extend_from_slice(b);
        e.push(1.0);
        e.windows(2).map(|w| PhoneInterval { start: w[0], end: w[1] }).collect::<Vec<_>>()
    };
    // sil A B sil with the model's edge boundaries deep in the pauses.
    let mut p = phones(&[0.02, 0.4, 0.98]);
    assert_eq!(clamp_edge_pauses(&mut p, true, true, (0.15, 0.8)), 2);
    assert_eq!(p, phones(&[0.15, 0.4, 0.8]));
    // Already inside speech: left alone.
    let mut p = phones(&[0.2, 0.4, 0.7]);
    assert_eq!(clamp_edge_pauses(&mut p, true, true, (0.15, 0.8)), 0);
    assert_eq!(p, phones(&[0.2, 0.4, 0.7]));
    // A move that would empty a phone is not made.
    let mut p = phones(&[0.02, 0.1, 0.98]);
    assert_eq!(clamp_edge_pauses(&mut p, true, false, (0.15, 0.8)), 0);
    let mut p = phones(&[0.02, 0.9, 0.98]);
    assert_eq!(clamp_edge_pauses(&mut p, false, true, (0.15, 0.8)), 0);
    // No pause at an end: that end is not touched.
    let mut p = phones(&[0.02, 0.4, 0.98]);
    assert_eq!(clamp_edge_pauses(&mut p, false, true, (0.15, 0.8)), 1);
    assert_eq!(p, phones(&[0.02, 0.4, 0.8]));
    // One phone: nothing to move.
    let mut p = phones(&[]);
    assert_eq!(clamp_edge_pauses(&mut p, true, true, (0.15, 0.8)), 0);
}

#[test]
fn speech_frames_are_the_extent_in_frames() {
    let levels = [-80.0, -80.0, -79.0, -30.0, -20.0, -25.0, -40.0, -80.0, -70.0, f64::NEG_INFINITY];
    assert_eq!(speech_frames(&levels, 45.0), Some((3, 7)));
    assert_eq!(speech_frames(&levels, 55.0), Some((3, 9)));
    assert_eq!(speech_frames(&[f64::NAN], 45.0), None);
}

/// Five pairs over 100 frames (blank 0, labels 1-5): a model that fires the
/// first three on the leading pause's first frames (squeezing two phonemes
/// into it), the fourth at frame 40 and the last on the trailing pause's
/// last frame; speech spans frames 30-69.
fn squeezed_posteriors() -> (Vec<f32>, usize, usize, Vec<u32>) {
    let (frames, classes) = (100, 6);
    let mut lp = vec![-10.0f32; frames * classes];
    for f in 0..frames {
        lp[f * classes] = -0.05;
    }
    for (f, label) in [(0, 1), (1, 2), (2, 3), (40, 4), (99, 5)] {
        lp[f * classes] = -6.0;
        lp[f * classes + label] = -0.01;
    }
    (lp, frames, classes, vec![1, 2, 3, 4, 5])
}

#[test]
fn inner_labels_are_decoded_inside_speech_and_the_rest_is_unchanged() {
    let (lp, frames, classes, labels) = squeezed_posteriors();
    let window = (27, 73);
    let keep = [0, 1, 5];
    let free = ctc_viterbi(&lp, frames, classes, &labels, 0).unwrap();
    let starts = |a: &CtcAlignment| a.spans.iter().map(|s| s.start).collect::<Vec<_>>();
    assert_eq!(starts(&free), [0, 1, 2, 40, 99]);
    assert!(!inner_within(&free, window));

    let mut inside = lp.clone();
    confine_labels(&mut inside, classes, &keep, window);
    for f in 0..frames {
        for c in 0..classes {
            let (was, now) = (lp[f * classes + c], inside[f * classes + c]);
            if keep.contains(&c) || (window.0..window.1).contains(&f) {
                assert_eq!(now, was, "frame {f} class {c}");
            } else {
                assert_eq!(now, was - CONFINE_PENALTY, "frame {f} class {c}");
            }
        }
    }
    let a = ctc_viterbi(&inside, frames, classes, &labels, 0).unwrap();
    assert!(inner_within(&a, window), "{:?}", a.spans);
    let s = starts(&a);
    // The edge pairs stay where the model put them (the level rule places them later), the
    // squeezed inner pairs move into speech, and the one the model placed there stays.
    assert_eq!((s[0], s[3], s[4]), (0, 40, 99), "{s:?}");
    assert!(s[1] >= window.0 && s[2] > s[1] && s[2] < 40, "{s:?}");
    // Kept classes outside the window cost what they did: the path scores as on the model's own
    // posteriors.
    let rescored: f32 = a
        .states
        .iter()
        .enumerate()
        .map(|(f, &st)| {
            let class = if st % 2 == 0 { 0 } else { labels[(st as usize - 1) / 2] as usize };
            lp[f * classes + class]
        })
        .sum();
    assert!((rescored - a.score).abs() < 1e-3, "{rescored} vs {}", a.score);

    // A window too short for the inner labels: a path still exists and says it left the window.
    let mut narrow = lp.clone();
    confine_labels(&mut narrow, classes, &keep, (50, 52));
    let a = ctc_viterbi(&narrow, frames, classes, &labels, 0).unwrap();
    assert!(!inner_within(&a, (50, 52)));
    assert!(a.score < -CONFINE_PENALTY);
    // The whole rule (the pipeline's): inner pairs inside speech less a frame at each end (frames
    // 31-68 of speech 30-69), then the edge pauses clamped to the extent. The squeezed phonemes
    // get speech, and the pauses end and begin where speech starts and stops.
    let mut rule = lp.clone();
    confine_labels(&mut rule, classes, &keep, (31, 69));
    let a = ctc_viterbi(&rule, frames, classes, &labels, 0).unwrap();
    let mut t = phone_timing(&a, 0.01, 1.0).unwrap();
    let extent = (0.295, 0.695);
    assert_eq!(clamp_edge_pauses(&mut t.phones, true, true, extent), 2);
    assert_eq!((t.phones[0].end, t.phones[5].start), extent);
    assert!(t.phones[1].end - t.phones[1].start >= 0.01 && t.phones[2].start > 0.3, "{:?}", t.phones);
    // Two labels or fewer have no inner ones.
    assert!(inner_within(&alignment(10, &[(0, 1), (9, 10)], 0.0), (4, 6)));
}
