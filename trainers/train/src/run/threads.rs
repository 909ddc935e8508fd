//! Ranks as threads of one process, joined by the in-process collective.

use dv_torch::tch;

use super::collective::{Collective, LocalCollective};
use super::config::RunConfig;
use super::lead::{Lead, Log};
use super::rank::{device_of, train_rank, RunSummary};
use crate::TrainError;

/// Runs `ranks` ranks as threads of this process on the CPU (or the
/// configured device), rank 0 logging through `log`.
pub fn train_threads(cfg: &RunConfig, ranks: usize, log: Log<'_>) -> Result<RunSummary, TrainError> {
    if ranks == 0 {
        return Err(TrainError::Config { path: "--ranks".into(), reason: "at least one rank".into() });
    }
    let lead = Lead::open(cfg, log)?;
    // Each rank thread sets its own intra-op thread count (OpenMP's is per
    // thread); a fixed count keeps CPU runs bitwise reproducible.
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let per_rank = cfg.train.threads_per_rank.unwrap_or(cores / ranks).max(1) as i32;
    let timeout = cfg.train.collective_timeout();
    let handles = LocalCollective::group(ranks, timeout);
    std::thread::scope(|s| {
        let mut lead = Some(lead);
        let joins: Vec<_> = handles
            .into_iter()
            .map(|mut coll| {
                let lead = if coll.rank() == 0 { lead.take() } else { None };
                s.spawn(move || {
                    tch::set_num_threads(per_rank);
                    let r = device_of(&cfg.train.device).and_then(|d| train_rank(cfg, &mut coll, d, lead));
                    match &r {
                        Ok(_) => coll.finish(),
                        Err(e) => coll.abort(&e.to_string()),
                    }
                    r
                })
            })
            .collect();
        let results: Vec<Result<RunSummary, TrainError>> = joins
            .into_iter()
            .enumerate()
            .map(|(rank, j)| {
                j.join().unwrap_or_else(|p| {
                    let message = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    Err(TrainError::Panicked { rank, message })
                })
            })
            .collect();
        // The root cause: the first error that is not another rank's failure echoed.
        let echo = |r: &Result<RunSummary, TrainError>| {
            matches!(r, Err(TrainError::Collective(crate::CollectiveError::PeerFailed { .. })))
        };
        let mut results = results;
        if let Some(k) = results.iter().position(|r| r.is_err() && !echo(r)) {
            return results.swap_remove(k);
        }
        if let Some(k) = results.iter().position(|r| r.is_err()) {
            return results.swap_remove(k);
        }
        results.swap_remove(0)
    })
}
