use std::path::{Path, PathBuf};

use dv_audio::{probe, AudioError, Container, SampleFormat};

/// The fmt chunk fields of a test file.
struct Fmt {
    tag: u16,
    channels: u16,
    rate: u32,
    bits: u16,
}

/// Writes a WAV file with the given fmt fields and `data_bytes` of payload,
/// declaring `declared` bytes in the data chunk header.
fn wav(dir: &Path, name: &str, fmt: Fmt, data_bytes: usize, declared: u32) -> PathBuf {
    let Fmt { tag, channels, rate, bits } = fmt;
    let align = channels * bits / 8;
    let mut b = Vec::new();
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + data_bytes as u32).to_le_bytes());
    b.extend_from_slice(b"WAVE");
    b.extend_from_slice(b"fmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&tag.to_le_bytes());
    b.extend_from_slice(&channels.to_le_bytes());
    b.extend_from_slice(&rate.to_le_bytes());
    b.extend_from_slice(&(rate * align as u32).to_le_bytes());
    b.extend_from_slice(&align.to_le_bytes());
    b.extend_from_slice(&bits.to_le_bytes());
    // An unrelated chunk of odd size before the data, as some editors write.
    b.extend_from_slice(b"LIST");
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&[1, 2, 3, 0]);
    b.extend_from_slice(b"data");
    b.extend_from_slice(&declared.to_le_bytes());
    b.extend(std::iter::repeat_n(0u8, data_bytes));
    let p = dir.join(name);
    std::fs::write(&p, b).unwrap();
    p
}

#[test]
fn pcm_and_float_wavs_report_rate_channels_and_frames() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        (1, 1, 16_000, 16, SampleFormat::Pcm(16)),
        (1, 2, 48_000, 24, SampleFormat::Pcm(24)),
        (1, 1, 22_050, 32, SampleFormat::Pcm(32)),
        (1, 1, 8_000, 8, SampleFormat::Pcm(8)),
        (3, 1, 16_384, 32, SampleFormat::Float(32)),
        (3, 2, 44_100, 64, SampleFormat::Float(64)),
    ];
    for (i, (tag, ch, rate, bits, fmt)) in cases.into_iter().enumerate() {
        let bytes = 1000 * ch as usize * bits as usize / 8;
        let p = wav(d.path(), &format!("{i}.wav"), Fmt { tag, channels: ch, rate, bits }, bytes, bytes as u32);
        let info = probe(&p).unwrap();
        assert_eq!(
            (info.container, info.format, info.sample_rate, info.channels, info.frames),
            (Container::Wav, fmt, rate, ch, 1000)
        );
        assert!((info.duration() - 1000.0 / rate as f64).abs() < 1e-12);
    }
}

#[test]
fn truncated_wav_is_reported_with_both_sizes() {
    let d = tempfile::tempdir().unwrap();
    let p = wav(d.path(), "cut.wav", Fmt { tag: 1, channels: 1, rate: 16_000, bits: 16 }, 100, 32_000);
    match probe(&p) {
        Err(AudioError::Truncated { path, declared, available }) => {
            assert_eq!(path, p);
            assert_eq!((declared, available), (32_000, 100));
        }
        other => panic!("expected Truncated, got {other:?}"),
    }
}

#[test]
fn zero_length_wav_and_empty_file_are_empty() {
    let d = tempfile::tempdir().unwrap();
    let p = wav(d.path(), "zero.wav", Fmt { tag: 1, channels: 1, rate: 16_000, bits: 16 }, 0, 0);
    assert!(matches!(probe(&p), Err(AudioError::Empty { .. })));
    let e = d.path().join("nothing.wav");
    std::fs::write(&e, b"").unwrap();
    assert!(matches!(probe(&e), Err(AudioError::Empty { .. })));
}

#[test]
fn unsupported_codecs_are_named() {
    let d = tempfile::tempdir().unwrap();
    let p = wav(d.path(), "mulaw.wav", Fmt { tag: 7, channels: 1, rate: 8_000, bits: 8 }, 800, 800);
    match probe(&p) {
        Err(AudioError::Unsupported { what, .. }) => assert_eq!(what, "mu-law"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
    let p = wav(d.path(), "pcm12.wav", Fmt { tag: 1, channels: 1, rate: 8_000, bits: 12 }, 800, 800);
    assert!(matches!(probe(&p), Err(AudioError::Unsupported { .. })));
}

#[test]
fn garbage_and_missing_files_are_errors_naming_the_file() {
    let d = tempfile::tempdir().unwrap();
    let g = d.path().join("garbage.wav");
    std::fs::write(&g, b"RIFF\x10\x00\x00\x00JUNKJUNK").unwrap();
    let err = probe(&g).unwrap_err();
    assert!(matches!(err, AudioError::Malformed { .. }), "{err:?}");
    assert!(err.to_string().contains("garbage.wav"));
    let t = d.path().join("text.flac");
    std::fs::write(&t, b"this is not audio at all").unwrap();
    assert!(matches!(probe(&t), Err(AudioError::Malformed { .. })));
    let m = d.path().join("missing.wav");
    let err = probe(&m).unwrap_err();
    assert!(matches!(err, AudioError::Io { .. }) && err.to_string().contains("missing.wav"));
}

#[test]
fn flac_length_comes_from_streaminfo() {
    // 0.25 s of 440 Hz at 16 kHz, made by `sox -R -n -r 16000 -c 1 -b 16 tone.flac synth 0.25 sine 440`.
    let p = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run under cargo test"))
        .join("tests/fixtures/tone.flac");
    let info = probe(&p).unwrap();
    assert_eq!((info.container, info.sample_rate, info.channels, info.frames), (Container::Flac, 16_000, 1, 4000));
    assert_eq!(info.format, SampleFormat::Coded(Some(16)));
}

/// Silent MPEG-1 Layer III frames (128 kb/s, 44.1 kHz, 417 bytes each,
/// 1152 samples), behind an ID3v2.4 tag of 64 bytes of padding.
#[test]
fn an_mp3_behind_an_id3v2_tag_probes_and_decodes() {
    let d = tempfile::tempdir().unwrap();
    let mut b = b"ID3\x04\x00\x00\x00\x00\x00\x40".to_vec();
    b.extend_from_slice(&[0u8; 64]);
    for _ in 0..20 {
        b.extend_from_slice(&[0xFF, 0xFB, 0x90, 0x64]);
        b.extend_from_slice(&[0u8; 413]);
    }
    let path = d.path().join("tagged.mp3");
    std::fs::write(&path, b).unwrap();
    let info = dv_audio::probe(&path).unwrap();
    assert_eq!((info.container, info.sample_rate, info.channels), (dv_audio::Container::Mp3, 44_100, 2));
    let decoded = dv_audio::decode(&path).unwrap();
    assert!(decoded.samples.len() >= 18 * 1152, "{} samples", decoded.samples.len());
    assert!(decoded.samples.iter().all(|&s| s == 0.0));
}
