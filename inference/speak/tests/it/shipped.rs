//! The voice that ships in the repository (`inference/voices/slt`): it loads
//! (every model reproduces the golden outputs its trainer saved), and a short
//! sentence spoken with it has the planned length, a speech level, and a
//! spectrum like speech: neither silence nor white noise. How intelligible it
//! is, is a benchmark (benchmarks/voice.md), not a unit test.

use std::ops::ControlFlow;
use std::path::PathBuf;

use dv_speak::{CancelToken, RenderOptions, Speaker, SpeakerOptions};
use dv_synth::Precision;

fn shipped() -> PathBuf {
    PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"))
        .join("../voices/slt")
}

/// Mean over 512-sample frames of the spectral flatness (geometric over
/// arithmetic mean of the power spectrum, DFT bins 1..256): about 0.56 for
/// white noise, far lower for speech.
fn flatness(x: &[f64]) -> f64 {
    let n = 512;
    let mut total = 0.0;
    let mut frames = 0;
    for f in x.chunks_exact(n).filter(|f| f.iter().map(|v| v * v).sum::<f64>() / n as f64 > 1e-6) {
        let (mut log_sum, mut sum) = (0.0, 0.0);
        for k in 1..n / 2 {
            let (mut re, mut im) = (0.0, 0.0);
            for (t, v) in f.iter().enumerate() {
                let w = 0.5 - 0.5 * (2.0 * std::f64::consts::PI * t as f64 / n as f64).cos();
                let a = 2.0 * std::f64::consts::PI * (k * t) as f64 / n as f64;
                re += v * w * a.cos();
                im -= v * w * a.sin();
            }
            let p = re * re + im * im + 1e-12;
            log_sum += p.ln();
            sum += p;
        }
        let m = (n / 2 - 1) as f64;
        total += (log_sum / m).exp() / (sum / m);
        frames += 1;
    }
    total / frames.max(1) as f64
}

#[test]
fn the_shipped_voice_loads_and_speaks_like_speech() {
    let dir = shipped();
    let options = SpeakerOptions { precision: Precision::Int16, ..SpeakerOptions::default() };
    let speaker = Speaker::load(&dir, &options).expect("the shipped voice loads and reproduces its golden outputs");
    let p = speaker.parity();
    assert!(p.duration.is_some() && p.g2p.is_some() && p.wavenet.is_some(), "every model has goldens: {p:?}");
    assert_eq!(p.g2p.unwrap().differ, 0);
    let sentences = speaker.plan("The train leaves at noon.", 1.0).unwrap();
    assert_eq!(sentences.len(), 1);
    let s = &sentences[0];
    assert!((0.8..4.0).contains(&s.duration_s), "planned {} s", s.duration_s);
    let words: Vec<&str> = s.words.iter().map(|w| w.word.as_str()).collect();
    assert_eq!(words, ["the", "train", "leaves", "at", "noon"]);
    let mut pcm = Vec::new();
    let render = RenderOptions { seed: 7, ..RenderOptions::default() };
    speaker
        .render(s, &render, &CancelToken::new(), &mut |b: &[i16]| {
            pcm.extend_from_slice(b);
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(pcm.len(), s.samples());
    let x: Vec<f64> = pcm.iter().map(|&v| v as f64 / 32768.0).collect();
    let rms = (x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64).sqrt();
    let db = 20.0 * rms.log10();
    assert!((-40.0..-6.0).contains(&db), "level {db:.1} dBFS");
    // speech has quiet stretches (pauses, closures) and loud ones; noise and a hum do not
    let frame_db: Vec<f64> = x
        .chunks_exact(1024)
        .map(|f| 10.0 * (f.iter().map(|v| v * v).sum::<f64>() / f.len() as f64 + 1e-12).log10())
        .collect();
    let (lo, hi) = frame_db.iter().fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    assert!(hi - lo > 20.0, "frame levels span only {:.1} dB", hi - lo);
    let flat = flatness(&x);
    eprintln!("level {db:.1} dBFS, frame levels span {:.1} dB, flatness {flat:.3}", hi - lo);
    assert!(flat < 0.25, "spectral flatness {flat:.3}: closer to white noise (about 0.56) than to speech");
    // white noise at the same level is caught by the same test
    let mut state = 1u64;
    let noise: Vec<f64> = (0..x.len())
        .map(|_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * rms * 3.46
        })
        .collect();
    assert!(flatness(&noise) > 0.4, "the flatness measure does not tell noise ({:.3})", flatness(&noise));
}
