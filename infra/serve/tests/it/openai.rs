//! OpenAI's official Python client (`openai` from PyPI, the version
//! `infra/install.sh` pins in `SERVE_TEST_PACKAGES`) against the server with
//! the shipped voice: `audio.speech.create` in wav, pcm and flac, and
//! `with_streaming_response` as raw audio and as SSE (`openai_client.py`).
//! Each answer is decoded by sox, an independent decoder, and judged by its
//! rate (OpenAI's 24 kHz), its duration and its level.

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
async fn openais_python_client_gets_24_khz_speech_in_every_format() {
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
        ("stream", &raw[..], None),
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
    let st = &answers["stream"];
    assert!(st["chunks"].as_u64().unwrap() >= 5, "{st}");
    assert!(st["first_s"].as_f64().unwrap() < st["total_s"].as_f64().unwrap() / 2.0, "{st}");
    // OpenAI's SSE: deltas, then done with the same rate and sample count.
    let sse = &answers["sse"];
    assert!(sse["deltas"].as_u64().unwrap() >= 5, "{sse}");
    assert_eq!(sse["last"], "speech.audio.done");
    assert_eq!(sse["done_sample_rate"], 24000);
    let bytes = std::fs::metadata(sse["file"].as_str().unwrap()).unwrap().len();
    assert_eq!(sse["done_samples"].as_u64().unwrap() * 2, bytes);
    assert_eq!(sse["usage"]["input_tokens"], TEXT.chars().count());
    // The client sent the key: every request was admitted under auth.
    assert_eq!(s.metric("dv_serve_requests_total{endpoint=\"speech\",status=\"200\"}").await, 5.0);
}
