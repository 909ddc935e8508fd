//! The web page in a real headless browser (Debian's `chromium`, driven by
//! `browser.py` over the DevTools protocol): it loads, fills the voice
//! picker, speaks a text through the timed SSE endpoint, schedules the PCM
//! into WebAudio, plays it and draws the timeline.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::{voices, Server};

/// Debian's chromium, or a clear failure: this test must not pass without it.
fn chromium() -> PathBuf {
    for c in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = Command::new("which").arg(c).output() {
            if out.status.success() {
                return PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            }
        }
    }
    panic!("no chromium found: install Debian's `chromium` (apt-get install -y chromium; infra/run test does)")
}

/// What the page showed after its self-test on `url`: `browser.py` drives
/// chromium over the DevTools protocol and prints one JSON line.
fn run_page(url: &str) -> Value {
    let profile = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out_path = out_dir.path().join("result.json");
    let script = format!(
        "{}/tests/it/browser.py",
        std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR")
    );
    let mut child = dv_process_group::ProcessGroup::spawn(
        Command::new("python3")
            .arg(script)
            .arg(chromium())
            .arg(url)
            .arg(profile.path())
            .arg("60")
            .stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(Stdio::inherit()),
    )
    .expect("python3 runs browser.py (the DevTools client): install python3");
    let status = super::wait_within(&mut child, Duration::from_secs(90), "the browser");
    drop(child); // ends any helper process chromium left behind
    let text = std::fs::read_to_string(&out_path).unwrap();
    assert!(status.success(), "browser.py failed: {status:?} {text}");
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// `key=value` from the page's result line.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split(' ').find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_speaks_in_a_headless_browser() {
    let s = Server::start(voices(false), |_| {}).await;
    // The same request the page makes, for the number of samples to expect.
    let want = reqwest::Client::new()
        .post(s.url("/v1/audio/speech"))
        .json(&serde_json::json!({ "model": "deepvoice", "input": crate::TEXT, "voice": "test", "response_format": "pcm" }))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .len()
        / 2;
    let url = s.url(&format!("/?selftest=1&voice=test&text={}", crate::TEXT.replace(' ', "%20").replace('!', "%21")));
    let seen = tokio::task::spawn_blocking(move || run_page(&url)).await.unwrap();
    eprintln!("the page: {seen}");
    let line = seen["result"].as_str().unwrap();
    assert_eq!(seen["voices"], serde_json::json!(["test"]), "the voice picker");
    assert_eq!(field(line, "error"), None, "{seen}");
    assert_eq!(field(line, "samples").and_then(|v| v.parse::<usize>().ok()), Some(want), "samples received: {seen}");
    assert_eq!(field(line, "sentences"), Some("2"), "{seen}");
    assert_eq!(field(line, "words"), Some("6"), "{seen}");
    // The timeline shows the words and the phonemes.
    assert_eq!(seen["words"], "hello world good speech bye now");
    assert!(seen["timeline_spans"].as_u64().unwrap() > 6, "{seen}");
    // Every sample scheduled into WebAudio played.
    assert_eq!(seen["played"].as_u64(), Some(want as u64), "{seen}");
    // Served through the timed endpoint.
    assert!(s.metric("dv_serve_requests_total{endpoint=\"timed\",status=\"200\"}").await >= 1.0);
}
