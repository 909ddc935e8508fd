use std::path::PathBuf;

use dv_audio::{decode, Mfcc, MfccConfig};

fn golden(name: &str) -> (Vec<f32>, u32, Vec<f32>) {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run under cargo test")).join("tests/golden");
    let d = decode(&dir.join(format!("{name}.wav"))).unwrap();
    let bytes = std::fs::read(dir.join(format!("{name}.mfcc.f32"))).unwrap();
    let want = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    (d.samples, d.info.sample_rate, want)
}

/// librosa 0.11 `feature.mfcc` with the same parameters, on speech and on
/// white noise (golden files from tests/golden/make_mfcc.py): the largest
/// difference is at most 1e-3 of the coefficients' range.
fn parity(name: &str) {
    let (audio, rate, want) = golden(name);
    let mfcc = Mfcc::new(&MfccConfig::for_rate(rate)).unwrap();
    let got = mfcc.compute(&audio).unwrap();
    assert_eq!(got.len(), want.len(), "{name}: frame count differs from librosa");
    let lo = want.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = want.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let max_diff = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    eprintln!(
        "{name}: max |ours - librosa| = {max_diff:.3e}, range {:.1}, ratio {:.2e}",
        hi - lo,
        max_diff / (hi - lo)
    );
    assert!(max_diff <= 1e-3 * (hi - lo), "{name}: max diff {max_diff} over range {}", hi - lo);
}

#[test]
fn mfcc_matches_librosa_on_speech() {
    parity("speech_16000");
}

#[test]
fn mfcc_matches_librosa_on_noise() {
    parity("noise_16384");
}

#[test]
fn defaults_are_the_documented_ones() {
    let c = MfccConfig::default();
    assert_eq!(
        (c.sample_rate, c.n_mfcc, c.hop_length, c.win_length, c.n_fft, c.n_mels),
        (16_384, 20, 164, 410, 512, 40)
    );
    let c = MfccConfig::for_rate(16_000);
    assert_eq!((c.hop_length, c.win_length, c.n_fft), (160, 400, 512));
}

#[test]
fn scratch_reuse_gives_the_same_answer_and_bad_configs_are_errors() {
    let mfcc = Mfcc::new(&MfccConfig::default()).unwrap();
    let a: Vec<f32> = (0..5000).map(|i| ((i as f32) * 0.05).sin() * 0.3).collect();
    let b: Vec<f32> = (0..9000).map(|i| ((i as f32) * 0.011).sin() * 0.2).collect();
    let mut scratch = mfcc.make_scratch();
    let mut out_b = vec![0.0; mfcc.frames(b.len()) * 20];
    mfcc.compute_into(&b, &mut out_b, &mut scratch).unwrap();
    let mut out_a = vec![0.0; mfcc.frames(a.len()) * 20];
    mfcc.compute_into(&a, &mut out_a, &mut scratch).unwrap();
    assert_eq!(out_a, mfcc.compute(&a).unwrap(), "a longer utterance before must not leak into a shorter one");
    let mut wrong = vec![0.0; 7];
    assert!(mfcc.compute_into(&a, &mut wrong, &mut scratch).is_err());
    assert!(Mfcc::new(&MfccConfig { win_length: 1024, ..MfccConfig::default() }).is_err());
    assert!(Mfcc::new(&MfccConfig { n_mfcc: 41, ..MfccConfig::default() }).is_err());
    assert!(Mfcc::new(&MfccConfig { fmax: 9000.0, ..MfccConfig::default() }).is_err());
    // Empty audio still has one (padded) frame, as in librosa.
    assert_eq!(mfcc.compute(&[]).unwrap().len(), 20);
}
