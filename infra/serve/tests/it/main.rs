//! Integration tests of dv-serve: the server in this process on an
//! ephemeral loopback port (the binary as a child for signals), voices made
//! here from random weights (`dv_synth::random`) in a temporary folder passed
//! as the search path (the shipped voice for OpenAI's client, `openai.rs`).
//! The test voice (`fixture.rs`) and `eventually` (`wait.rs`) are dv-speak's
//! and dv-slots' test files, included by path.

mod abuse;
mod browser;
mod encoded;
mod errors;
#[path = "../../../../inference/speak/tests/it/fixture.rs"]
mod fixture;
mod lexicon;
mod openai;
mod openapi;
mod ops;
mod slots;
mod speech;
#[path = "../../../../inference/slots/tests/it/wait.rs"]
mod wait;

use std::path::Path;
use std::time::{Duration, Instant};

use dv_serve::{serve, ServeConfig};
use dv_synth::random::random_text_voice;
use dv_voice::WavenetConfig;
use tokio::sync::oneshot;

pub use fixture::{duration_config, save_package, FAST, TEXT};
pub use wait::eventually;

/// The shipped voice's size (Table 2's 20x64x128): about real time on one
/// core of the dev VM, slow enough to watch a render in progress.
pub const SLOW: WavenetConfig =
    WavenetConfig { layers: 20, residual_channels: 64, skip_channels: 128, dilation_cycle: 10 };

/// Saves a random voice with golden outputs and the fixture's lexicon as `dir/name`.
pub fn save_voice(dir: &Path, name: &str, wavenet: WavenetConfig, seed: u64) {
    let voice = random_text_voice(wavenet, duration_config(), None, seed).unwrap();
    save_package(&voice, &dir.join(name), true);
}

/// A folder of voices: `test` ([`FAST`]) and, when asked, `slow` ([`SLOW`]).
pub fn voices(slow: bool) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    save_voice(d.path(), "test", FAST, 5);
    if slow {
        save_voice(d.path(), "slow", SLOW, 6);
    }
    d
}

/// A server in this process, stopped (and waited for) on drop.
pub struct Server {
    pub base: String,
    pub addr: std::net::SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    pub handle: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    pub voices: tempfile::TempDir,
}

impl Server {
    /// Serves `voices` with the default voice `test`, 2 workers, queue 4,
    /// and whatever `tune` changes; waits until `/readyz` says ready when
    /// the config preloads.
    pub async fn start(voices: tempfile::TempDir, tune: impl FnOnce(&mut ServeConfig)) -> Server {
        let mut c = ServeConfig::new(vec![voices.path().to_path_buf()], "test".into());
        c.workers = 2;
        c.queue = 4;
        tune(&mut c);
        let preload = c.preload;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = oneshot::channel();
        let handle = tokio::spawn(serve(listener, c, async {
            let _ = rx.await;
        }));
        let s = Server { base: format!("http://{addr}"), addr, shutdown: Some(tx), handle: Some(handle), voices };
        if preload {
            s.wait_ready().await;
        }
        s
    }

    pub async fn wait_ready(&self) {
        let client = reqwest::Client::new();
        let t = Instant::now();
        loop {
            if let Ok(r) = client.get(format!("{}/readyz", self.base)).send().await {
                if r.status() == 200 {
                    return;
                }
            }
            assert!(t.elapsed() < Duration::from_secs(30), "the server did not get ready");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Signals shutdown (the handle then resolves once the server stopped).
    pub fn shut_down(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }

    /// A metric's value from `/metrics` (the first line that starts with
    /// `name`, labels included in `name` if given).
    pub async fn metric(&self, name: &str) -> f64 {
        let text = reqwest::get(self.url("/metrics")).await.unwrap().text().await.unwrap();
        metric_in(&text, name).unwrap_or_else(|| panic!("{name} not in /metrics:\n{text}"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shut_down();
        if let Some(h) = self.handle.take() {
            h.abort();
        }
    }
}

/// A sample's value in Prometheus text: the line `name value` or
/// `name{…} value` whose series is exactly `name`.
pub fn metric_in(text: &str, name: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (series, value) = l.rsplit_once(' ')?;
        (series == name).then(|| value.parse().ok()).flatten()
    })
}

/// A speech request body with the test text and a seed.
pub fn body(extra: serde_json::Value) -> serde_json::Value {
    let mut b = serde_json::json!({ "model": "deepvoice", "input": TEXT, "voice": "test", "seed": 42 });
    if let (Some(b), Some(e)) = (b.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    b
}

/// Little-endian 16-bit samples.
pub fn samples(bytes: &[u8]) -> Vec<i16> {
    bytes.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect()
}

/// Waits at most `limit` for a process group a test started (a client, a
/// browser, a fuzzer), failing the test with `what` past it; dropping the
/// group afterwards ends whatever it left running.
pub fn wait_within(
    child: &mut dv_process_group::ProcessGroup,
    limit: Duration,
    what: &str,
) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(t.elapsed() < limit, "{what} did not finish in {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
