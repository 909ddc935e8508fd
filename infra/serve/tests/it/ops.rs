//! Running it: the queue and 429, a client that leaves, metrics, health,
//! slow clients, graceful shutdown, the binary under SIGTERM, and its
//! golden-parity verdicts cached across restarts.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use dv_process_group::ProcessGroup;

use futures::StreamExt;
use serde_json::{json, Value};

use crate::{body, eventually, metric_in, voices, Server};

/// A long text for the slow voice: seconds of rendering.
fn long_body() -> Value {
    body(json!({ "voice": "slow", "input": "Hello world good speech. ".repeat(20), "speed": 0.5 }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_is_429_with_retry_after() {
    let s = Server::start(voices(true), |c| {
        c.workers = 1;
        c.queue = 1;
    })
    .await;
    let c = reqwest::Client::new();
    // One rendering (its headers arrived, so it holds the worker) ...
    let a = c.post(s.url("/v1/audio/speech")).json(&long_body()).send().await.unwrap();
    assert_eq!(a.status(), 200);
    // ... one waiting for it ...
    let url = s.url("/v1/audio/speech");
    let waiting = tokio::spawn(async move { reqwest::Client::new().post(url).json(&long_body()).send().await });
    assert!(
        eventually(Duration::from_secs(10), || async { s.metric("dv_serve_queue_depth").await == 1.0 }).await,
        "the second request never queued"
    );
    // ... and no room for a third.
    let r = c.post(s.url("/v1/audio/speech")).json(&body(json!({}))).send().await.unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "1");
    let e: Value = r.json().await.unwrap();
    assert_eq!(
        (e["error"]["type"].as_str(), e["error"]["code"].as_str()),
        (Some("rate_limit_error"), Some("queue_full"))
    );
    assert!(s.metric("dv_serve_requests_total{endpoint=\"speech\",status=\"429\"}").await >= 1.0);
    // Both leave; their renders stop, and the server takes work again.
    drop(a);
    waiting.abort();
    let _ = waiting.await;
    assert!(
        eventually(Duration::from_secs(10), || async {
            s.metric("dv_serve_rendering").await == 0.0 && s.metric("dv_serve_queue_depth").await == 0.0
        })
        .await,
        "renders still running"
    );
    let r = c.post(s.url("/v1/audio/speech")).json(&body(json!({}))).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(!r.bytes().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_stops_its_render() {
    let s = Server::start(voices(true), |_| {}).await;
    assert_eq!(s.metric("dv_serve_renders_cancelled_total").await, 0.0);
    let r = reqwest::Client::new().post(s.url("/v1/audio/speech")).json(&long_body()).send().await.unwrap();
    let mut stream = r.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert!(!first.is_empty());
    assert_eq!(s.metric("dv_serve_active_streams").await, 1.0);
    assert_eq!(s.metric("dv_serve_rendering").await, 1.0);
    let t = Instant::now();
    drop(stream);
    assert!(
        eventually(Duration::from_secs(5), || async {
            s.metric("dv_serve_renders_cancelled_total").await == 1.0
                && s.metric("dv_serve_active_streams").await == 0.0
                && s.metric("dv_serve_rendering").await == 0.0
        })
        .await,
        "the render went on after the client left"
    );
    // Stopped within a few blocks, not after the 40-odd seconds of audio.
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert_eq!(s.metric("dv_serve_audio_seconds_total").await, 0.0, "a cancelled render counts no audio");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_loses_its_render() {
    let s = Server::start(voices(false), |c| c.stall_timeout = Duration::from_millis(300)).await;
    // A raw connection that sends the request and reads nothing: the
    // socket buffers and the channel fill, the render waits, then stops.
    let b = json!({ "model": "deepvoice", "voice": "test", "input": "Hello world good speech. ".repeat(100), "speed": 0.25 })
        .to_string();
    let mut tcp = TcpStream::connect(s.addr).unwrap();
    write!(
        tcp,
        "POST /v1/audio/speech HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{b}",
        b.len()
    )
    .unwrap();
    assert!(
        eventually(Duration::from_secs(20), || async {
            s.metric("dv_serve_renders_cancelled_total").await == 1.0 && s.metric("dv_serve_rendering").await == 0.0
        })
        .await,
        "a stalled client kept its render"
    );
    drop(tcp);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_are_cut_off() {
    let s = Server::start(voices(false), |c| c.header_timeout = Duration::from_millis(500)).await;
    let mut tcp = TcpStream::connect(s.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tcp.write_all(b"POST /v1/audio/speech HTTP/1.1\r\nhost: x\r\n").unwrap();
    let t = Instant::now();
    let mut buf = Vec::new();
    // The server closes the connection (with or without a 408).
    let _ = tcp.read_to_end(&mut buf);
    assert!(t.elapsed() < Duration::from_secs(3), "held for {:?}", t.elapsed());
    assert!(buf.is_empty() || String::from_utf8_lossy(&buf).starts_with("HTTP/1.1 408"), "{buf:?}");
    // A slow body: 408 after the body timeout.
    let s2 = Server::start(voices(false), |c| c.body_timeout = Duration::from_millis(300)).await;
    let mut tcp = TcpStream::connect(s2.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tcp.write_all(b"POST /v1/audio/speech HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{\"mo").unwrap();
    let mut buf = [0u8; 512];
    let n = tcp.read(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("request_timeout"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_parse_and_name_what_they_measure() {
    let s = Server::start(voices(false), |_| {}).await;
    let c = reqwest::Client::new();
    for _ in 0..2 {
        let r = c.post(s.url("/v1/audio/speech")).json(&body(json!({}))).send().await.unwrap();
        r.bytes().await.unwrap();
    }
    c.post(s.url("/v1/audio/speech")).json(&body(json!({ "speed": 9 }))).send().await.unwrap();
    let r = reqwest::get(s.url("/metrics")).await.unwrap();
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/plain; version=0.0.4"));
    let text = r.text().await.unwrap();
    // Every line is a comment or `series value` with a number.
    for line in text.lines() {
        if let Some(c) = line.strip_prefix('#') {
            assert!(c.starts_with(" HELP ") || c.starts_with(" TYPE "), "{line}");
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
        value.parse::<f64>().unwrap_or_else(|_| panic!("{line}"));
        let name = series.split('{').next().unwrap();
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{line}");
        assert!(series.contains('{') == series.ends_with('}'), "{line}");
    }
    let get = |name: &str| metric_in(&text, name).unwrap_or_else(|| panic!("{name} missing:\n{text}"));
    assert_eq!(get("dv_serve_requests_total{endpoint=\"speech\",status=\"200\"}"), 2.0);
    assert_eq!(get("dv_serve_requests_total{endpoint=\"speech\",status=\"400\"}"), 1.0);
    assert_eq!(get("dv_serve_time_to_first_audio_seconds_count"), 2.0);
    assert!(get("dv_serve_time_to_first_audio_seconds_sum") > 0.0);
    assert_eq!(get("dv_serve_time_to_first_audio_seconds_bucket{le=\"+Inf\"}"), 2.0);
    assert_eq!(get("dv_serve_real_time_factor_count"), 2.0);
    assert!(get("dv_serve_audio_seconds_total") > 1.0);
    for g in
        ["dv_serve_queue_depth", "dv_serve_active_streams", "dv_serve_rendering", "dv_serve_renders_cancelled_total"]
    {
        assert_eq!(get(g), 0.0, "{g}");
    }
    assert_eq!(get("dv_serve_voices_loaded"), 1.0);
    assert!(text.contains("# TYPE dv_serve_time_to_first_audio_seconds histogram"));
    assert!(text.contains("# TYPE dv_serve_requests_total counter"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_readiness() {
    // Without preloading, not ready until the default voice is used.
    let s = Server::start(voices(false), |c| c.preload = false).await;
    let r = reqwest::get(s.url("/healthz")).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "ok");
    let r = reqwest::get(s.url("/readyz")).await.unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "loading");
    let r = reqwest::Client::new().post(s.url("/v1/audio/speech")).json(&body(json!({}))).send().await.unwrap();
    r.bytes().await.unwrap();
    let r = reqwest::get(s.url("/readyz")).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["voice"], "test");
    // A default voice that does not exist: never ready, and it says why.
    let s = Server::start(voices(false), |c| {
        c.default_voice = "missing".into();
        c.preload = false;
    })
    .await;
    let r = reqwest::get(s.url("/readyz")).await.unwrap();
    assert_eq!(r.status(), 503);
    // The page is served and self-contained.
    let page = reqwest::get(s.url("/")).await.unwrap().text().await.unwrap();
    assert!(page.contains("/v1/audio/speech/timed") && !page.contains("http://") && !page.contains("https://"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_in_flight_work_then_cancels_it() {
    // A long grace: the stream in flight completes; new connections fail.
    let mut s = Server::start(voices(false), |c| c.shutdown_grace = Duration::from_secs(30)).await;
    let whole = reqwest::Client::new()
        .post(s.url("/v1/audio/speech"))
        .json(&body(json!({ "input": "Hello world good speech. ".repeat(30) })))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let r = reqwest::Client::new()
        .post(s.url("/v1/audio/speech"))
        .json(&body(json!({ "input": "Hello world good speech. ".repeat(30) })))
        .send()
        .await
        .unwrap();
    s.shut_down();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(TcpStream::connect(s.addr).is_err(), "still accepting after shutdown");
    assert_eq!(r.bytes().await.unwrap(), whole, "the stream in flight was cut");
    let h = s.handle.take().unwrap();
    tokio::time::timeout(Duration::from_secs(5), h).await.unwrap().unwrap().unwrap();

    // A short grace: the long render in flight is cancelled, and the server
    // is gone within the grace and two seconds.
    let mut s = Server::start(voices(true), |c| c.shutdown_grace = Duration::from_millis(500)).await;
    let r = reqwest::Client::new().post(s.url("/v1/audio/speech")).json(&long_body()).send().await.unwrap();
    let mut stream = r.bytes_stream();
    stream.next().await.unwrap().unwrap();
    let t = Instant::now();
    s.shut_down();
    let h = s.handle.take().unwrap();
    tokio::time::timeout(Duration::from_secs(5), h).await.expect("shutdown hung").unwrap().unwrap();
    assert!(t.elapsed() < Duration::from_millis(2500), "{:?}", t.elapsed());
    let mut ended_with_error = false;
    while let Some(c) = stream.next().await {
        if c.is_err() {
            ended_with_error = true;
            break;
        }
    }
    assert!(ended_with_error, "a cancelled stream must not look complete");
}

/// A port free now (bound then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The binary on `port` serving the voices in `voices` (default voice
/// `test`), with `$DV_HOME` at `home` and what `tune` adds; stdout dropped.
fn spawn_binary(
    port: u16,
    voices: &Path,
    home: &Path,
    tune: impl FnOnce(&mut Command) -> &mut Command,
) -> ProcessGroup {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dv-serve"));
    cmd.args(["--port", &port.to_string(), "--voice", "test", "--voices"])
        .arg(voices)
        .env("DV_HOME", home)
        .env_remove("DV_API_KEY")
        .stdout(Stdio::null());
    ProcessGroup::spawn(tune(&mut cmd)).unwrap()
}

/// Waits until the binary on `port` answers `/readyz` with 200 (at most
/// 20 s, failing if it exits); how long that took.
fn ready_within(child: &mut ProcessGroup, port: u16) -> Duration {
    let t = Instant::now();
    loop {
        if let Ok(mut tcp) = TcpStream::connect(("127.0.0.1", port)) {
            tcp.write_all(b"GET /readyz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").unwrap();
            let mut s = String::new();
            let _ = tcp.read_to_string(&mut s);
            if s.starts_with("HTTP/1.1 200") {
                return t.elapsed();
            }
        }
        assert!(t.elapsed() < Duration::from_secs(20), "dv-serve did not get ready");
        assert!(child.try_wait().unwrap().is_none(), "dv-serve exited");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends SIGTERM and waits (at most 10 s) for the binary to stop.
fn terminate(child: &mut ProcessGroup) -> ExitStatus {
    let kill = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "dv-serve ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_binary_stops_on_sigterm_and_binds_loopback_only() {
    let (dir, home) = (voices(false), tempfile::tempdir().unwrap());
    let port = free_port();
    let mut child = spawn_binary(port, dir.path(), home.path(), |c| c);
    let ready = ready_within(&mut child, port);
    eprintln!("dv-serve ready after {ready:?}");
    let status = terminate(&mut child);
    assert!(status.success(), "{status:?}");
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    // Beyond loopback only when told.
    let out = Command::new(env!("CARGO_BIN_EXE_dv-serve")).args(["--host", "0.0.0.0", "--port", "0"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--public"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_binary_refuses_a_sampling_mode_the_gpu_lacks_before_loading_anything() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_dv-serve")).args(args).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for mode in ["mean", "top-k:5"] {
        let (ok, err) = run(&["--device", "cuda", "--sampling", mode, "--port", "0"]);
        assert!(!ok && err.contains("--sampling") && err.contains("GPU"), "{mode}: {err}");
    }
    let (ok, err) = run(&["--sampling", "voiced-temperature:0", "--port", "0"]);
    assert!(!ok && err.contains("temperature"), "{err}");
}

#[test]
fn the_binary_serves_a_package_directory_and_refuses_a_default_voice_it_cannot_find() {
    let (dir, home) = (voices(false), tempfile::tempdir().unwrap());
    // --voice DIR, as dv synth takes it: served under the directory's name.
    let port = free_port();
    let package = dir.path().join("test");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dv-serve"));
    cmd.args(["--port", &port.to_string(), "--voice", package.to_str().unwrap()])
        .env("DV_HOME", home.path())
        .env_remove("DV_API_KEY")
        .stdout(Stdio::null());
    let mut child = ProcessGroup::spawn(&mut cmd).unwrap();
    ready_within(&mut child, port);
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.write_all(b"GET /readyz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).unwrap();
    assert!(answer.contains(r#""voice":"test""#), "{answer}");
    assert!(terminate(&mut child).success());
    // A name found nowhere: refused at start, naming it and what is there.
    let out = Command::new(env!("CARGO_BIN_EXE_dv-serve"))
        .args(["--port", "0", "--voice", "nope", "--voices"])
        .arg(dir.path())
        .env("DV_HOME", home.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains(r#"no voice "nope""#) && err.contains("known voices: ") && err.contains("test"), "{err}");
}

#[test]
fn the_binary_takes_three_devices_and_refuses_others_naming_them() {
    let stderr = |device: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_dv-serve")).args(["--device", device, "--help"]).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for good in ["cpu", "cuda", "cpu-slots"] {
        assert_eq!(stderr(good), (true, String::new()), "{good}");
    }
    for bad in ["gpu", "CPU", "cpu_slots", ""] {
        let (ok, e) = stderr(bad);
        assert!(!ok, "{bad:?}");
        assert!(e.contains("--device") && e.contains("[possible values: cpu, cuda, cpu-slots]"), "{bad:?}: {e}");
    }
}

/// The binary keeps voices' golden-parity verdicts where `dv synth` does
/// (`$DV_HOME/parity`, through `dv_speak::Parity::check_cached`): a
/// restarted server loads a voice it checked before without the checks, and
/// checks a changed package again.
#[test]
fn a_restarted_binary_takes_a_checked_voice_s_verdict_from_the_cache_until_the_package_changes() {
    let (dir, home) = (voices(false), tempfile::tempdir().unwrap());
    // What one start prints about loading the default voice.
    let start = |run: &str| -> String {
        let port = free_port();
        let log = home.path().join(format!("stderr-{run}"));
        let file = std::fs::File::create(&log).unwrap();
        let mut child = spawn_binary(port, dir.path(), home.path(), |c| c.stderr(file));
        ready_within(&mut child, port);
        assert!(terminate(&mut child).success());
        let text = std::fs::read_to_string(&log).unwrap();
        let line = text.lines().find(|l| l.starts_with("dv-serve: voice \"test\" loaded from "));
        line.unwrap_or_else(|| panic!("{run}: no load line in\n{text}")).to_string()
    };
    let cache = home.path().join("parity");
    let entries = || std::fs::read_dir(&cache).map_or(0, |d| d.count());

    assert!(start("first").ends_with(": golden parity checked"));
    assert_eq!(entries(), 1, "the verdict is cached in $DV_HOME/parity");
    assert!(start("second").ends_with(": golden parity as cached for this package and build"));

    // Another package under the same name: another digest, checked again.
    crate::save_voice(dir.path(), "test", crate::FAST, 6);
    assert!(start("changed").ends_with(": golden parity checked"));
    assert_eq!(entries(), 2);
    assert!(start("changed again").ends_with(": golden parity as cached for this package and build"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn voices_load_on_first_use_and_the_least_recent_is_dropped() {
    let s = Server::start(voices(true), |c| c.max_voices = 1).await;
    assert_eq!(s.metric("dv_serve_voices_loaded").await, 1.0, "the preloaded default");
    let c = reqwest::Client::new();
    for voice in ["slow", "test", "slow"] {
        let r = c
            .post(s.url("/v1/audio/speech"))
            .json(&body(json!({ "voice": voice, "input": "Bye now." })))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["x-voice"], voice);
        assert!(!r.bytes().await.unwrap().is_empty());
        assert_eq!(s.metric("dv_serve_voices_loaded").await, 1.0, "{voice}: more than one voice kept");
    }
    // The default voice was dropped for "slow": not ready until used again.
    assert_eq!(reqwest::get(s.url("/readyz")).await.unwrap().status(), 503);
    let s = Server::start(voices(true), |c| c.max_voices = 2).await;
    for voice in ["slow", "test"] {
        let r = c.post(s.url("/v1/audio/speech")).json(&body(json!({ "voice": voice, "input": "Bye now." }))).send();
        r.await.unwrap().bytes().await.unwrap();
    }
    assert_eq!(s.metric("dv_serve_voices_loaded").await, 2.0);
}

/// `infra/run demo`'s toy voices (`demo-…`) are marked as such; the default
/// voice is listed first wherever it sorts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_voice_list_puts_the_default_first_and_marks_demo_voices() {
    let d = voices(false);
    crate::save_voice(d.path(), "demo-tiny", crate::FAST, 7);
    crate::save_voice(d.path(), "alpha", crate::FAST, 8);
    let s = Server::start(d, |_| {}).await;
    let v: Value = reqwest::get(s.url("/v1/audio/voices")).await.unwrap().json().await.unwrap();
    let want = json!([
        { "id": "test", "name": "test", "demo": false },
        { "id": "alpha", "name": "alpha", "demo": false },
        { "id": "demo-tiny", "name": "demo-tiny (demo)", "demo": true },
    ]);
    assert_eq!(v["voices"], want, "{v}");
    assert_eq!(v["default"], "test");
    // A demo voice still speaks when asked by its id.
    let r = reqwest::Client::new()
        .post(s.url("/v1/audio/speech"))
        .json(&body(json!({ "voice": "demo-tiny", "input": "Bye now." })))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-voice"], "demo-tiny");
}
