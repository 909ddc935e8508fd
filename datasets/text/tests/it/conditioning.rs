//! The App. A.3 conditioning signal, checked by hand on a small utterance and
//! against its definition on random ones.

use dv_text::{
    conditioning_features, conditioning_frames, frame_phonemes, ConditioningError, F0Contour, F0Normalization, Phoneme,
    Stress, StressedPhoneme, TimedPhoneme, CONDITIONING_DIM, SLOT_DIM,
};
use dv_util::SplitMix64;

fn timed(symbols: &[(&str, f64, f64)]) -> Vec<TimedPhoneme> {
    symbols.iter().map(|&(s, start, end)| TimedPhoneme { phoneme: s.parse().unwrap(), start, end }).collect()
}

fn hello() -> Vec<TimedPhoneme> {
    // Boundaries at 25.6, 51.2 and 89.6 frames: rounded to 26, 51 and 90.
    timed(&[("sil", 0.0, 0.1), ("HH", 0.1, 0.2), ("EH1", 0.2, 0.35), ("sil", 0.35, 0.5)])
}

/// The (phoneme, stress) one-hot positions set in slot `s` of a frame, or
/// None when the slot is all zeros. Fails if a slot has more than one bit.
fn slot(frame: &[f32], s: usize) -> Option<(usize, usize)> {
    let b = 2 + s * SLOT_DIM;
    let ph: Vec<usize> = (0..Phoneme::COUNT).filter(|&i| frame[b + i] != 0.0).collect();
    let st: Vec<usize> = (0..Stress::COUNT).filter(|&i| frame[b + Phoneme::COUNT + i] != 0.0).collect();
    assert!(ph.len() <= 1 && st.len() <= 1 && ph.len() == st.len(), "slot {s}: {ph:?} {st:?}");
    assert!(frame[b..b + SLOT_DIM].iter().all(|&v| v == 0.0 || v == 1.0));
    ph.first().map(|&p| (p, st[0]))
}

#[test]
fn dimension_is_the_papers_227() {
    assert_eq!(CONDITIONING_DIM, 227);
    assert_eq!(SLOT_DIM, 45);
}

#[test]
fn quantization_rounds_boundaries_to_frames() {
    let owner = frame_phonemes(&hello(), 128).unwrap();
    let count = |k: usize| owner.iter().filter(|&&o| o == k).count();
    assert_eq!((count(0), count(1), count(2), count(3)), (26, 25, 39, 38));
    assert_eq!(owner[25], 0);
    assert_eq!(owner[26], 1);
    assert_eq!(owner[89], 2);
    assert_eq!(owner[90], 3);
    // Frames past the last phoneme's end belong to it.
    assert!(frame_phonemes(&hello(), 200).unwrap()[128..].iter().all(|&o| o == 3));
}

#[test]
fn frames_carry_the_context_window_and_f0() {
    let phones = hello();
    // 200 Hz voiced from 0.1 s to 0.35 s on a 1/256 s grid, unvoiced elsewhere.
    let hz: Vec<f32> = (0..128).map(|j| if (26..90).contains(&j) { 200.0 } else { 0.0 }).collect();
    let f0 = F0Contour { start: 0.5 / 256.0, step: 1.0 / 256.0, hz: &hz };
    let norm = F0Normalization { min_hz: 100.0, max_hz: 400.0 };
    let mut out = vec![9.0; 3];
    conditioning_features(&phones, &f0, &norm, 128, &mut out).unwrap();
    assert_eq!(out.len(), 128 * CONDITIONING_DIM);
    let frame = |i: usize| &out[i * CONDITIONING_DIM..(i + 1) * CONDITIONING_DIM];
    let sil = (Phoneme::Sil.index(), Stress::None.index());
    let hh = (Phoneme::Hh.index(), Stress::None.index());
    let eh1 = (Phoneme::Eh.index(), Stress::Primary.index());
    // Frame 0: the first silence; nothing before it.
    assert_eq!([slot(frame(0), 0), slot(frame(0), 1)], [None, None]);
    assert_eq!([slot(frame(0), 2), slot(frame(0), 3), slot(frame(0), 4)], [Some(sil), Some(hh), Some(eh1)]);
    assert_eq!(&frame(0)[..2], &[0.0, 0.0]);
    // Frame 60: EH1, with sil HH before and sil after, and nothing two after.
    let f = frame(60);
    assert_eq!((0..5).map(|s| slot(f, s)).collect::<Vec<_>>(), vec![Some(sil), Some(hh), Some(eh1), Some(sil), None]);
    // 200 Hz is the geometric middle of 100–400 Hz: normalized log F0 0.
    assert_eq!(f[0], 1.0);
    assert!(f[1].abs() < 1e-6, "{}", f[1]);
    // Frame 100: the last silence, unvoiced.
    assert_eq!(&frame(100)[..2], &[0.0, 0.0]);
    assert_eq!(slot(frame(100), 2), Some(sil));
    // Every frame has exactly one current phoneme.
    assert!((0..128).all(|i| slot(frame(i), 2).is_some()));
}

#[test]
fn log_f0_normalization_maps_the_observed_range_to_plus_minus_one() {
    let hz = [0.0, 110.0, f32::NAN, 330.0, 0.0, 220.0];
    let norm = F0Normalization::observed(&hz).unwrap();
    assert_eq!((norm.min_hz, norm.max_hz), (110.0, 330.0));
    assert!((norm.normalize(110.0) + 1.0).abs() < 1e-6);
    assert!((norm.normalize(330.0) - 1.0).abs() < 1e-6);
    // ln(220/110) / ln(3) * 2 - 1
    let want = (2.0 * 2f64.ln() / 3f64.ln() - 1.0) as f32;
    assert!((norm.normalize(220.0) - want).abs() < 1e-6);
    assert!(norm.normalize(55.0) < -1.0);
    assert_eq!(F0Normalization::observed(&[0.0, 120.0, 120.0]), None);
}

#[test]
fn robust_f0_range_ignores_a_few_octave_errors() {
    // 1,000 voiced frames between 150 and 300 Hz, 0.5 % of them at a tracker's floor and
    // ceiling (octave errors): the observed range is the errors', the robust one the voice's.
    let mut hz: Vec<f32> = (0..1000).map(|i| 150.0 + 150.0 * i as f32 / 999.0).collect();
    hz.extend([75.0, 75.0, 0.0, f32::NAN, 499.9, 499.9, 499.9]);
    let observed = F0Normalization::observed(&hz).unwrap();
    assert_eq!((observed.min_hz, observed.max_hz), (75.0, 499.9));
    let robust = F0Normalization::robust(&hz).unwrap();
    assert!((150.0..=153.0).contains(&robust.min_hz), "{robust:?}");
    assert!((297.0..=300.0).contains(&robust.max_hz), "{robust:?}");
    assert_eq!(F0Normalization::robust(&[0.0, 120.0, 120.0]), None);
    assert_eq!(F0Normalization::robust(&[]), None);
}

#[test]
fn frame_counts_follow_the_audio_length() {
    assert_eq!(conditioning_frames(16_384, 16_384), 256);
    assert_eq!(conditioning_frames(16_000, 16_000), 256);
    assert_eq!(conditioning_frames(1, 16_384), 1);
    assert_eq!(conditioning_frames(65, 16_384), 2);
    assert_eq!(conditioning_frames(0, 16_384), 0);
}

/// Uniform in `[0, 1)` with 53 random bits (exact in f64).
fn unit(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

#[test]
fn random_utterances_keep_every_boundary_within_half_a_frame() {
    let mut rng = SplitMix64::new(0x5eed);
    for _ in 0..200 {
        let n = 1 + (unit(&mut rng) * 40.0) as usize;
        let mut t = 0.0;
        let mut phones = Vec::new();
        for _ in 0..n {
            let d = 0.002 + unit(&mut rng) * 0.2;
            let p = Phoneme::from_index((unit(&mut rng) * 40.0) as usize).unwrap();
            let s = Stress::from_digit(char::from(b'0' + (unit(&mut rng) * 3.0) as u8)).unwrap();
            phones.push(TimedPhoneme { phoneme: StressedPhoneme::new(p, s), start: t, end: t + d });
            t += d;
        }
        let frames = conditioning_frames((t * 16_384.0).ceil() as usize, 16_384);
        let owner = frame_phonemes(&phones, frames).unwrap();
        assert_eq!(owner.len(), frames);
        assert!(owner.windows(2).all(|w| w[0] <= w[1]), "monotonic");
        for (k, p) in phones.iter().enumerate() {
            let first = owner.iter().position(|&o| o == k);
            let count = owner.iter().filter(|&&o| o == k).count() as f64;
            // Its frame count is its duration in frames, off by less than one.
            if k + 1 < phones.len() {
                assert!((count - (p.end - p.start) * 256.0).abs() < 1.0 + 1e-9, "phoneme {k}: {count} frames");
            }
            // Its first frame starts within half a frame of its start.
            if let Some(i) = first {
                assert!(k == 0 || (i as f64 - p.start * 256.0).abs() <= 0.5 + 1e-9);
            }
        }
        let hz = vec![150.0f32; frames];
        let f0 = F0Contour { start: 0.5 / 256.0, step: 1.0 / 256.0, hz: &hz };
        let mut out = Vec::new();
        conditioning_features(&phones, &f0, &F0Normalization::PRAAT_RANGE, frames, &mut out).unwrap();
        for (i, frame) in out.chunks_exact(CONDITIONING_DIM).enumerate() {
            let k = owner[i];
            let cur = phones[k].phoneme;
            assert_eq!(slot(frame, 2), Some((cur.phoneme.index(), cur.stress.index())));
            assert_eq!(slot(frame, 0).is_some(), k >= 2);
            assert_eq!(slot(frame, 4).is_some(), k + 2 < phones.len());
            assert_eq!(frame[0], 1.0);
        }
    }
}

#[test]
fn bad_inputs_are_errors() {
    let f0 = F0Contour { start: 0.0, step: 1.0 / 256.0, hz: &[] };
    let norm = F0Normalization::PRAAT_RANGE;
    let mut out = Vec::new();
    assert_eq!(conditioning_features(&[], &f0, &norm, 10, &mut out), Err(ConditioningError::NoPhonemes));
    let backwards = timed(&[("sil", 0.0, 0.1), ("AA1", 0.3, 0.2)]);
    assert!(matches!(
        conditioning_features(&backwards, &f0, &norm, 10, &mut out),
        Err(ConditioningError::BadSpan { index: 1, .. })
    ));
    let overlap = timed(&[("sil", 0.0, 0.1), ("AA1", 0.05, 0.2)]);
    assert!(matches!(
        conditioning_features(&overlap, &f0, &norm, 10, &mut out),
        Err(ConditioningError::Overlap { index: 1, .. })
    ));
    let bad_norm = F0Normalization { min_hz: 200.0, max_hz: 100.0 };
    assert!(matches!(
        conditioning_features(&hello(), &f0, &bad_norm, 10, &mut out),
        Err(ConditioningError::BadNormalization { .. })
    ));
    // Unvoiced everywhere with an empty contour, and no failure.
    conditioning_features(&hello(), &f0, &norm, 10, &mut out).unwrap();
    assert!(out.chunks_exact(CONDITIONING_DIM).all(|f| f[0] == 0.0 && f[1] == 0.0));
}
