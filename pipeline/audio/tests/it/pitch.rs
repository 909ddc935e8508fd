use std::f64::consts::PI;

use dv_audio::{Pitch, PitchConfig};

fn sine(f: f64, rate: u32, secs: f64, amp: f64) -> Vec<f32> {
    (0..(rate as f64 * secs) as usize).map(|i| (amp * (2.0 * PI * f * i as f64 / rate as f64).sin()) as f32).collect()
}

#[test]
fn steady_tones_are_tracked_within_a_tenth_of_a_percent() {
    for (f, rate) in [(100.0, 16_000), (220.0, 16_384), (440.0, 22_050)] {
        let p = Pitch::new(&PitchConfig::default(), rate).unwrap();
        let t = p.track(&sine(f, rate, 1.0, 0.5)).unwrap();
        assert_eq!(t.step, 1.0 / 256.0);
        // Praat: floor((1 - 0.04) / step) + 1 frames, centred.
        assert_eq!(t.hz.len(), ((1.0 - 0.04) * 256.0f64).floor() as usize + 1);
        assert!((t.start + (t.hz.len() - 1) as f64 * t.step / 2.0 - 0.5).abs() < 1e-9, "frames are centred");
        let worst = t.hz.iter().map(|h| ((*h as f64 - f) / f).abs()).fold(0.0, f64::max);
        assert!(worst < 1e-3, "{f} Hz at {rate} Hz: worst relative error {worst}");
    }
}

#[test]
fn silence_noise_and_short_input_are_unvoiced() {
    let p = Pitch::new(&PitchConfig::default(), 16_000).unwrap();
    assert!(p.track(&vec![0.0; 16_000]).unwrap().hz.iter().all(|h| *h == 0.0));
    let mut state = 2017u64;
    let noise: Vec<f32> = (0..16_000)
        .map(|_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        })
        .collect();
    let t = p.track(&noise).unwrap();
    let voiced = t.hz.iter().filter(|h| **h > 0.0).count();
    assert!(voiced * 20 < t.hz.len(), "white noise: {voiced} of {} frames voiced", t.hz.len());
    assert!(p.track(&vec![0.1; 100]).unwrap().hz.is_empty(), "shorter than one window: no frames");
    assert!(p.track(&[]).unwrap().hz.is_empty());
}

#[test]
fn tone_then_silence_switches_voicing() {
    let rate = 16_000;
    let mut x = sine(150.0, rate, 0.5, 0.5);
    x.extend(vec![0.0f32; rate as usize / 2]);
    let t = Pitch::new(&PitchConfig::default(), rate).unwrap().track(&x).unwrap();
    let at = |s: f64| t.hz[((s - t.start) / t.step).round() as usize];
    assert!((at(0.25) - 150.0).abs() < 0.5);
    assert_eq!(at(0.8), 0.0);
    assert!(Pitch::new(&PitchConfig { ceiling: 50.0, ..PitchConfig::default() }, rate).is_err());
}
