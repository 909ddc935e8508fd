//! One rank of a multi-process CPU run: a process started with `RANK`,
//! `WORLD_SIZE`, `MASTER_ADDR` and `MASTER_PORT` ([`RankEnv`]; by `dv train
//! --procs`, torchrun or Slurm, on one host or many) and `[train] device =
//! "cpu"` joins the others through the [`TcpCollective`] and runs the same
//! loop as ranks as threads, with the same results bit for bit.

use std::time::Duration;

use dv_torch::tch;

use super::collective::Collective;
use super::config::RunConfig;
use super::lead::{Lead, Log};
use super::rank::{device_of, train_rank, RunSummary};
use super::rendezvous::RankEnv;
use super::tcp::TcpCollective;
use crate::TrainError;

/// Trains this process's rank on the CPU; rank 0 logs through `log`. The
/// group forms within the collective timeout or a minute, whichever is
/// longer. libtorch threads: `[train] threads_per_rank`, else the cores
/// divided among this host's ranks (`LOCAL_WORLD_SIZE` as torchrun sets
/// it, else the world), as [`train_threads`](super::threads::train_threads)
/// divides them.
pub fn train_process(cfg: &RunConfig, env: &RankEnv, log: Log<'_>) -> Result<RunSummary, TrainError> {
    let device = device_of(&cfg.train.device)?;
    if device != tch::Device::Cpu {
        return Err(TrainError::Config {
            path: "[train] device".into(),
            reason: format!("{:?}: ranks over TCP run on the CPU (GPU ranks use NCCL)", cfg.train.device),
        });
    }
    let timeout = cfg.train.collective_timeout();
    let mut coll = TcpCollective::connect(env, timeout, timeout.max(Duration::from_secs(60)))?;
    let local =
        std::env::var("LOCAL_WORLD_SIZE").ok().and_then(|v| v.trim().parse::<usize>().ok()).unwrap_or(env.world);
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    tch::set_num_threads(cfg.train.threads_per_rank.unwrap_or(cores / local.max(1)).max(1) as i32);
    let lead = if env.rank == 0 { Some(Lead::open(cfg, log)?) } else { None };
    let r = train_rank(cfg, &mut coll, device, lead);
    match &r {
        // Every rank stopped after the same step (and waited for rank 0's checkpoint).
        Ok(_) | Err(TrainError::Stopped { .. }) => coll.finish(),
        Err(e) => coll.abort(&e.to_string()),
    }
    r
}
