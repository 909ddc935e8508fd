//! Polling for a condition that becomes true on another thread or task:
//! shared with dv-serve's tests, which include this file with `#[path]`.

use std::time::{Duration, Instant};

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
