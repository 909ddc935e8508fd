//! Stopping a run at a step boundary on request: a scheduler's SIGTERM
//! (Slurm's `--signal`, a Kubernetes pod's termination) sets
//! [`stop_flag`] through the binary's signal handler. Rank 0 reads it once
//! per step and its value travels in that step's all-reduce (beside the
//! loss), so every rank stops after the same step; rank 0 writes a
//! checkpoint of that step and the run ends with
//! [`TrainError::Stopped`](crate::TrainError::Stopped). Run again, it
//! resumes there exactly, as from any checkpoint.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

static FLAG: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// This process's stop request, for a signal handler to set
/// (`signal_hook::flag::register(SIGTERM, stop_flag())`).
pub fn stop_flag() -> Arc<AtomicBool> {
    FLAG.clone()
}

/// Whether a stop was requested.
pub(crate) fn stop_requested() -> bool {
    FLAG.load(Ordering::Relaxed)
}
