//! Integration tests of dv-serve: the server in this process on an
//! ephemeral loopback port (the binary as a child for signals), voices made
//! here from random weights (`dv_synth::random`) in a temporary folder passed
//! as the search path (the shipped voice for OpenAI's client, `openai.rs`).

mod abuse;
mod browser;
mod encoded;
mod errors;
mod lexicon;
mod openai;
mod openapi;
mod ops;
mod slots;
mod speech;

use std::path::Path;
use std::time::{Duration, Instant};

use dv_serve::{serve, ServeConfig};
use dv_synth::random::{random_golden, random_text_voice};
use dv_voice::{DurationConfig, Voice, WavenetConfig};
use tokio::sync::oneshot;

/// A WaveNet small enough to sample seconds of audio in a blink.
pub const FAST: WavenetConfig = WavenetConfig { layers: 2, residual_channels: 8, skip_channels: 8, dilation_cycle: 2 };

/// The shipped voice's size (Table 2's 20x64x128): about real time on one
/// core of the dev VM, slow enough to watch a render in progress.
pub const SLOW: WavenetConfig =
    WavenetConfig { layers: 20, residual_channels: 64, skip_channels: 128, dilation_cycle: 10 };

/// Every word the tests speak.
pub const LEXICON: &str = "\
hello HH AH0 L OW1
world W ER1 L D
good G UH1 D
speech S P IY1 CH
bye B AY1
now N AW1
";

/// Two sentences, a short pause in the first.
pub const TEXT: &str = "Hello world, good speech. Bye now!";

fn duration_config() -> DurationConfig {
    DurationConfig {
        input_dim: 45,
        fc: 16,
        gru: 8,
        gru_layers: 1,
        f0_points: 4,
        duration_unit_s: 0.01,
        f0_unit_hz: 100.0,
        stress: true,
    }
}

/// Saves a random voice with golden outputs and [`LEXICON`] as `dir/name`.
pub fn save_voice(dir: &Path, name: &str, wavenet: WavenetConfig, seed: u64) {
    let voice: Voice = random_text_voice(wavenet, duration_config(), None, seed).unwrap();
    let golden = random_golden(&voice, 4, 99).unwrap();
    let out = dir.join(name);
    voice.with_golden(golden).unwrap().save(&out).unwrap();
    std::fs::write(out.join(dv_speak::LEXICON_FILE), LEXICON).unwrap();
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

/// Waits until `f` holds, for at most `limit`.
pub async fn eventually<F, Fut>(limit: Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let t = Instant::now();
    while t.elapsed() < limit {
        if f().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
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
