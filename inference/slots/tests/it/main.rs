//! Integration tests of dv-slots: the scheduler on its CPU backend with
//! voices made here from random weights (`dv_synth::random`), the GPU's
//! launch windows, conditioning arena and conditioning thread on the CPU
//! reference, and the engine against `Speaker::render`.

mod engine;
mod scheduler;

use std::time::{Duration, Instant};

use dv_voice::WavenetConfig;

/// A WaveNet small enough to sample seconds of audio in a blink.
pub const FAST: WavenetConfig = WavenetConfig { layers: 2, residual_channels: 8, skip_channels: 8, dilation_cycle: 2 };

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
