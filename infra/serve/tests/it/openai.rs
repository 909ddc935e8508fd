//! OpenAI's official Python client (`openai` from PyPI, the version
//! `infra/install.sh` pins in `SERVE_TEST_PACKAGES`) against the server with
//! the shipped voice: `audio.speech.create` in every format (wav, pcm, flac,
//! mp3, opus), and `with_streaming_response` in each, and pcm as SSE
//! (`openai_client.py`). Each answer is decoded by an independent decoder
//! (sox for wav, pcm and flac; ffmpeg for mp3 and Ogg Opus) and judged by
//! its rate (OpenAI's 24 kHz; Opus's 48 kHz), its duration and its level.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::Server;

/// What the client speaks: two sentences, about 3 s.
const TEXT: &str = "Hello from Deep Voice. This is a test of the speech server.";

const KEY: &str = "sk-dv-openai-client-test";

/// `sox … -n stat` of a file (with `input` options before it): its length
/// in seconds and its RMS amplitude (full scale 1).
fn sox_stat(input: &[&str], path: &Path) -> (f64, f64) {
    let out = Command::new("sox")
        .args(input)
        .arg(path)
        .args(["-n", "stat"])
        .output()
        .expect("sox decodes the answers: apt-get install sox (infra/install.sh's APT_PACKAGES)");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "sox failed on {}: {text}", path.display());
    let field = |name: &str| -> f64 {
        let line = text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name:?} in {text}"));
        line.rsplit(' ').next().unwrap().trim().parse().unwrap_or_else(|e| panic!("{line}: {e}"))
    };
    (field("Length (seconds)"), field("RMS     amplitude"))
}

/// `soxi -r` of a file: the rate its header says.
fn soxi_rate(path: &Path) -> u32 {
    let out = Command::new("soxi").arg("-r").arg(path).output().expect("soxi comes with sox");
    assert!(out.status.success(), "soxi failed on {}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Whether ffmpeg is here to decode mp3 and opus (infra/install.sh's
/// TEST_APT_PACKAGES installs it).
fn have_ffmpeg() -> bool {
    Command::new("ffmpeg").arg("-version").output().is_ok_and(|o| o.status.success())
}

/// ffmpeg's decoding of a file: the rate its stream says (ffprobe) and its
/// samples, 16-bit mono, at that rate.
fn ffmpeg_decode(path: &Path) -> (u32, Vec<i16>) {
    let probe = Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=sample_rate", "-of", "csv=p=0"])
        .arg(path)
        .output()
        .expect("ffprobe comes with ffmpeg");
    assert!(probe.status.success(), "ffprobe failed on {}: {}", path.display(), String::from_utf8_lossy(&probe.stderr));
    let rate = String::from_utf8_lossy(&probe.stdout).trim().parse().unwrap();
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(["-f", "s16le", "-acodec", "pcm_s16le", "-ac", "1", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "ffmpeg failed on {}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
    (rate, crate::samples(&out.stdout))
}

/// RMS in dB of full scale.
fn rms_db(x: &[i16]) -> f64 {
    let ms = x.iter().map(|&v| (v as f64 / 32768.0).powi(2)).sum::<f64>() / x.len().max(1) as f64;
    10.0 * ms.max(1e-12).log10()
}

/// Runs `openai_client.py` against `base` (at most `limit`); its JSON line.
fn run_client(base: &str, out_dir: &Path, limit: Duration) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/openai_client.py");
    let out_path = out_dir.join("result.json");
    let mut child = dv_process_group::ProcessGroup::spawn(
        Command::new("python3")
            .arg(script)
            .args([&format!("{base}/v1"), KEY, "slt", TEXT])
            .arg(out_dir)
            .stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(Stdio::inherit()),
    )
    .expect("python3 runs openai_client.py");
    let status = super::wait_within(&mut child, limit, "the openai client");
    drop(child);
    let text = std::fs::read_to_string(&out_path).unwrap();
    assert!(
        status.success(),
        "openai_client.py failed ({status:?}): {text}; it needs OpenAI's client: infra/install.sh ensure_test_python"
    );
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openais_python_client_gets_speech_in_every_format() {
    // The shipped voice, by name, as a client would ask for it.
    let voices = tempfile::tempdir().unwrap();
    let shipped = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../inference/voices/slt");
    std::os::unix::fs::symlink(shipped.canonicalize().unwrap(), voices.path().join("slt")).unwrap();
    let s = Server::start(voices, |c| {
        c.default_voice = "slt".into();
        c.api_key = Some(KEY.into());
    })
    .await;
    let out = tempfile::tempdir().unwrap();
    let (base, dir) = (s.base.clone(), out.path().to_path_buf());
    let got = tokio::task::spawn_blocking(move || run_client(&base, &dir, Duration::from_secs(300))).await.unwrap();
    eprintln!("the client: {got}");
    let answers = &got["answers"];
    let raw = ["-t", "raw", "-r", "24000", "-e", "signed", "-b", "16", "-c", "1"];
    let mut lengths = Vec::new();
    for (name, input, want_type) in [
        ("wav", &[][..], Some("audio/wav")),
        ("flac", &[][..], Some("audio/flac")),
        ("pcm", &raw[..], Some("audio/pcm")),
        ("stream", &raw[..], Some("audio/pcm")),
        ("stream_wav", &[][..], Some("audio/wav")),
        ("stream_flac", &[][..], Some("audio/flac")),
        ("sse", &raw[..], None),
    ] {
        let a = &answers[name];
        assert_eq!(a["sample_rate"], "24000", "{name}: X-Sample-Rate");
        if let Some(t) = want_type {
            assert_eq!(a["content_type"], t, "{name}");
        }
        let path = PathBuf::from(a["file"].as_str().unwrap());
        if input.is_empty() {
            assert_eq!(soxi_rate(&path), 24000, "{name}: the rate in its header");
        }
        let (seconds, rms) = sox_stat(input, &path);
        assert!((1.0..10.0).contains(&seconds), "{name}: {seconds} s of audio for {TEXT:?}");
        assert!(rms > 0.01, "{name}: RMS {rms}: silence");
        assert!(rms < 0.7, "{name}: RMS {rms}: clipping noise, not speech");
        lengths.push((name, seconds));
    }
    // One text, one length (durations do not depend on the seed).
    let first = lengths[0].1;
    for (name, l) in &lengths {
        assert!((l - first).abs() < 0.002, "{name}: {l} s, wav {first} s");
    }
    // Streamed: many chunks, the first long before the end.
    for name in ["stream", "stream_wav", "stream_mp3", "stream_opus"] {
        let st = &answers[name];
        assert!(st["chunks"].as_u64().unwrap() >= 5, "{name}: {st}");
        assert!(st["first_s"].as_f64().unwrap() < st["total_s"].as_f64().unwrap() / 2.0, "{name}: {st}");
    }
    // mp3 and Ogg Opus: their types, rates and first bytes; decoded by
    // ffmpeg, the pcm answer's length (within 10 %: MP3 adds LAME's delay
    // and padding) and level (within 3 dB; every answer has the same seed).
    let pcm = crate::samples(&std::fs::read(answers["pcm"]["file"].as_str().unwrap()).unwrap());
    let (pcm_s, pcm_db) = (pcm.len() as f64 / 24000.0, rms_db(&pcm));
    let ffmpeg = have_ffmpeg();
    if !ffmpeg {
        eprintln!(
            "SKIPPED: decoding mp3 and opus (no ffmpeg: apt-get install ffmpeg, infra/install.sh's TEST_APT_PACKAGES)"
        );
    }
    for (name, want_type, want_rate, magic) in [
        ("mp3", "audio/mpeg", 24000, &[0xff][..]),
        ("stream_mp3", "audio/mpeg", 24000, &[0xff][..]),
        ("opus", "audio/opus", 48000, &b"OggS"[..]),
        ("stream_opus", "audio/opus", 48000, &b"OggS"[..]),
    ] {
        let a = &answers[name];
        assert_eq!(a["content_type"], want_type, "{name}");
        assert_eq!(a["sample_rate"], want_rate.to_string(), "{name}: X-Sample-Rate");
        let path = PathBuf::from(a["file"].as_str().unwrap());
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.starts_with(magic), "{name}: starts {:02x?}", &bytes[..bytes.len().min(4)]);
        if !ffmpeg {
            continue;
        }
        let (rate, decoded) = ffmpeg_decode(&path);
        assert_eq!(rate, want_rate, "{name}: the rate ffmpeg reads");
        let seconds = decoded.len() as f64 / rate as f64;
        assert!((seconds / pcm_s - 1.0).abs() < 0.1, "{name}: {seconds} s, pcm {pcm_s} s");
        let db = rms_db(&decoded);
        assert!((db - pcm_db).abs() < 3.0, "{name}: RMS {db:.1} dBFS, pcm {pcm_db:.1} dBFS");
        eprintln!(
            "{name}: {} bytes, {seconds:.3} s at {rate} Hz, RMS {db:.1} dBFS (pcm {pcm_s:.3} s, {pcm_db:.1} dBFS)",
            bytes.len()
        );
    }
    // OpenAI's SSE: deltas, then done with the same rate and sample count.
    let sse = &answers["sse"];
    assert!(sse["deltas"].as_u64().unwrap() >= 5, "{sse}");
    assert_eq!(sse["last"], "speech.audio.done");
    assert_eq!(sse["done_sample_rate"], 24000);
    let bytes = std::fs::metadata(sse["file"].as_str().unwrap()).unwrap().len();
    assert_eq!(sse["done_samples"].as_u64().unwrap() * 2, bytes);
    assert_eq!(sse["usage"]["input_tokens"], TEXT.chars().count());
    // The client sent the key: every request was admitted under auth.
    assert_eq!(s.metric("dv_serve_requests_total{endpoint=\"speech\",status=\"200\"}").await, 11.0);
}
