use std::f64::consts::PI;
use std::path::{Path, PathBuf};

use dv_audio::{decode, mulaw, resample, AudioError};

#[test]
fn mulaw_round_trips_every_code_exactly() {
    for q in 0..=255u8 {
        assert_eq!(mulaw::encode(mulaw::decode(q)), q, "code {q}");
    }
    for q in 0..255u8 {
        assert!(mulaw::decode(q) < mulaw::decode(q + 1), "decoding is strictly increasing at {q}");
    }
    assert_eq!((mulaw::decode(0), mulaw::decode(255)), (-1.0, 1.0));
    assert_eq!(mulaw::encode(0.0), 128);
    assert_eq!(mulaw::encode(5.0), 255);
    assert_eq!(mulaw::encode(-5.0), 0);
    assert_eq!(mulaw::encode(f32::NAN), 128);
}

#[test]
fn mulaw_error_is_within_half_a_step_in_the_companded_domain() {
    let compand = |x: f64| x.signum() * (255.0 * x.abs()).ln_1p() / 256f64.ln();
    for i in -10_000..=10_000 {
        let x = i as f32 / 10_000.0;
        let back = mulaw::decode(mulaw::encode(x));
        let err = (compand(x as f64) - compand(back as f64)).abs();
        assert!(err <= 1.0 / 255.0 + 1e-6, "x {x}: companded error {err}");
    }
    let x: Vec<f32> = (0..100).map(|i| (i as f32 / 50.0) - 1.0).collect();
    let mut q = vec![0u8; 100];
    let mut y = vec![0f32; 100];
    mulaw::encode_into(&x, &mut q);
    mulaw::decode_into(&q, &mut y);
    assert_eq!(q[0], 0);
    assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() < 0.04));
}

fn write_wav(path: &Path, tag: u16, channels: u16, rate: u32, bits: u16, data: &[u8]) {
    let align = channels * bits / 8;
    let mut b = b"RIFF".to_vec();
    b.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&tag.to_le_bytes());
    b.extend_from_slice(&channels.to_le_bytes());
    b.extend_from_slice(&rate.to_le_bytes());
    b.extend_from_slice(&(rate * align as u32).to_le_bytes());
    b.extend_from_slice(&align.to_le_bytes());
    b.extend_from_slice(&bits.to_le_bytes());
    b.extend_from_slice(b"data");
    b.extend_from_slice(&(data.len() as u32).to_le_bytes());
    b.extend_from_slice(data);
    std::fs::write(path, b).unwrap();
}

#[test]
fn wav_decoding_scales_every_format_and_averages_channels() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s16.wav");
    let vals: [i16; 4] = [0, 16_384, -32_768, 32_767];
    write_wav(&p, 1, 1, 8000, 16, &vals.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
    assert_eq!(decode(&p).unwrap().samples, [0.0, 0.5, -1.0, 32_767.0 / 32_768.0]);
    let p = d.path().join("s24_stereo.wav");
    // Left 0.5, right -0.25 → mean 0.125.
    let data: Vec<u8> = [4_194_304i32, -2_097_152].iter().flat_map(|v| v.to_le_bytes()[..3].to_vec()).collect();
    write_wav(&p, 1, 2, 8000, 24, &data);
    assert_eq!(decode(&p).unwrap().samples, [0.125]);
    let p = d.path().join("f32.wav");
    write_wav(&p, 3, 1, 8000, 32, &[0.25f32, -0.75].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
    assert_eq!(decode(&p).unwrap().samples, [0.25, -0.75]);
    let p = d.path().join("u8.wav");
    write_wav(&p, 1, 1, 8000, 8, &[128, 192, 0]);
    assert_eq!(decode(&p).unwrap().samples, [0.0, 0.5, -1.0]);
    let p = d.path().join("cut.wav");
    write_wav(&p, 1, 1, 8000, 16, &[0u8; 10]);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.truncate(bytes.len() - 4);
    std::fs::write(&p, bytes).unwrap();
    assert!(matches!(decode(&p), Err(AudioError::Truncated { .. })));
}

#[test]
fn flac_decodes_to_its_streaminfo_length_and_content() {
    let p = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run under cargo test"))
        .join("tests/fixtures/tone.flac");
    let d = decode(&p).unwrap();
    assert_eq!((d.samples.len(), d.info.sample_rate), (4000, 16_000));
    // 110 cycles of 440 Hz in 0.25 s; sox's synth peaks at -3 dBFS (`sox tone.flac -n stat`: 0.705017).
    let crossings = d.samples.windows(2).filter(|w| w[0] < 0.0 && w[1] >= 0.0).count();
    assert!((109..=111).contains(&crossings), "{crossings} upward zero crossings");
    let peak = d.samples.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    assert!((peak - 0.705_017).abs() < 1e-5, "peak {peak}");
    // A FLAC cut short is caught when decoded.
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.flac");
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    assert!(decode(&cut).is_err());
}

fn rms(x: &[f32]) -> f64 {
    (x.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / x.len() as f64).sqrt()
}

/// A linear sweep 0 → 20 kHz at 48 kHz, resampled to 16384 Hz: what lies
/// below the new Nyquist (8192 Hz) keeps its level, what lies above is gone.
#[test]
fn swept_sine_keeps_in_band_level_and_loses_what_lies_above_nyquist() {
    let (from, to, secs, f1) = (48_000u32, 16_384u32, 4.0, 20_000.0);
    let n = (from as f64 * secs) as usize;
    let sweep: Vec<f32> = (0..n)
        .map(|i| {
            let t = i as f64 / from as f64;
            (0.5 * (2.0 * PI * (f1 / (2.0 * secs)) * t * t).sin()) as f32
        })
        .collect();
    let out = resample(&sweep, from, to).unwrap();
    assert_eq!(out.len(), (n as u64 * to as u64).div_ceil(from as u64) as usize);
    // Instantaneous frequency f(t) = f1 t / secs.
    let at = |f: f64| (f / f1 * secs * to as f64) as usize;
    let in_band = rms(&out[at(500.0)..at(7000.0)]);
    let above = rms(&out[at(9500.0)..at(19_000.0)]);
    let want = 0.5 / 2f64.sqrt();
    let in_db = 20.0 * (in_band / want).log10();
    let above_db = 20.0 * (above / want).log10();
    eprintln!("sweep 48 kHz -> 16384 Hz: in band {in_db:+.3} dB, above Nyquist {above_db:.1} dB");
    assert!(in_db.abs() < 0.1, "in-band level changed by {in_db} dB");
    assert!(above_db < -60.0, "above Nyquist only {above_db} dB down");
}

#[test]
fn resampling_keeps_time_alignment() {
    let (from, to) = (16_000u32, 16_384u32);
    let f = 440.0;
    let x: Vec<f32> = (0..16_000).map(|i| (2.0 * PI * f * i as f64 / from as f64).sin() as f32 * 0.5).collect();
    let y = resample(&x, from, to).unwrap();
    // The best fit of a sine delayed by `shift` output samples.
    let fit = |shift: f64| {
        (2000..14_000)
            .map(|i| (y[i] as f64 - 0.5 * (2.0 * PI * f * (i as f64 - shift) / to as f64).sin()).abs())
            .fold(0.0, f64::max)
    };
    let (shift, err) = (-200..=200).map(|k| k as f64 / 100.0).map(|s| (s, fit(s))).fold((0.0, f64::MAX), |a, b| {
        if b.1 < a.1 {
            b
        } else {
            a
        }
    });
    eprintln!("16000 -> 16384 Hz: delay {shift:+.2} samples, residual {err:.2e}");
    assert!(shift.abs() <= 0.6, "the resampler's delay is removed to within a sample: {shift}");
    assert!(err < 2e-3, "resampled sine deviates by {err} at the best shift");
    assert_eq!(resample(&x, 16_000, 16_000).unwrap(), x);
    assert!(resample(&x, 0, 16_000).is_err());
}
