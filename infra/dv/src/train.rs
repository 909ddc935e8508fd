//! `dv train`: one training run from a TOML config, on CPU ranks (threads of
//! this process) or GPU ranks (one process per GPU, NCCL).

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use dv_nccl::{unique_id, NcclCollective, UNIQUE_ID_BYTES};
use dv_torch::tch;
use dv_train::{share_id, train_rank, train_threads, Collective, Lead, RankEnv, RunConfig, RunSummary};

#[derive(Args)]
pub(crate) struct TrainArgs {
    /// Run configuration (TOML; see the dv-train crate docs for every key).
    #[arg(long)]
    config: String,
    /// CPU data-parallel ranks, run as threads of this process with the in-process collective.
    #[arg(long, default_value_t = 1, conflicts_with = "gpus")]
    ranks: usize,
    /// GPU ranks on this machine: one process per GPU, gradients all-reduced with NCCL.
    /// Under torchrun or Slurm (RANK/WORLD_SIZE or SLURM_PROCID/SLURM_NTASKS set) each
    /// process is one rank and this is not needed.
    #[arg(long)]
    gpus: Option<usize>,
    /// Train to this many steps instead of the config's `[train] steps` (a
    /// resumed run continues to the new total).
    #[arg(long)]
    steps: Option<u64>,
}

/// The exit status of a run that stopped on SIGTERM after writing a
/// checkpoint (EX_TEMPFAIL): running it again, or requeueing the job, resumes.
pub(crate) const STOPPED_EXIT: i32 = 75;

/// Ends a run stopped by SIGTERM with [`STOPPED_EXIT`].
fn stopped(step: u64) -> ! {
    eprintln!(
        "stopped on SIGTERM after step {step} with a checkpoint of it; exit {STOPPED_EXIT} (run again to resume)"
    );
    std::process::exit(STOPPED_EXIT)
}

fn report(s: &RunSummary, ranks: usize, cfg: &RunConfig) {
    println!("steps          {} to {} on {} rank(s), {:.1} s", s.start_step, s.steps, ranks, s.seconds);
    println!("final loss     {:.6}", s.final_loss);
    if let Some(b) = s.best_validation {
        println!("best val loss  {b:.6}");
    }
    println!("checkpoints    {}", cfg.checkpoint.url);
    for skipped in &s.skipped_checkpoints {
        println!("skipped        {skipped}");
    }
    if let Some(id) = &s.mlflow_run_id {
        println!("mlflow run     {id}");
    }
}

pub(crate) fn run(a: TrainArgs) -> anyhow::Result<()> {
    let mut cfg = RunConfig::load(&a.config)?;
    if let Some(steps) = a.steps {
        if steps == 0 {
            bail!("--steps must be at least 1");
        }
        cfg.train.steps = steps;
    }
    let env = RankEnv::from_env()?;
    if let (None, Some(gpus)) = (&env, a.gpus) {
        return launch(&a.config, a.steps, gpus, cfg.train.collective_timeout());
    }
    // SIGTERM: stop after the current step with a checkpoint of it (dv_train::stop_flag).
    signal_hook::flag::register(signal_hook::consts::SIGTERM, dv_train::stop_flag())
        .context("installing the SIGTERM handler")?;
    match env {
        // One task of a launcher (srun, torchrun) training on the CPU: this
        // process's threads, as without a launcher. Several CPU processes
        // have no collective between them.
        Some(env) if cfg.train.device == "cpu" => {
            if env.world > 1 {
                bail!(
                    "{}: [train] device = \"cpu\" in a launcher's world of {} processes (this is rank {}): \
                     CPU ranks are threads of one process; launch one task and pass --ranks N",
                    a.config,
                    env.world,
                    env.rank
                );
            }
        }
        Some(env) => return gpu_rank(&cfg, env),
        None => {}
    }
    let mut log = |line: &str| eprintln!("{line}");
    let s = match train_threads(&cfg, a.ranks, &mut log) {
        Err(dv_train::TrainError::Stopped { step }) => stopped(step),
        r => r?,
    };
    report(&s, a.ranks, &cfg);
    Ok(())
}

/// One GPU rank: rendezvous, NCCL communicator, the shared loop.
fn gpu_rank(cfg: &RunConfig, env: RankEnv) -> anyhow::Result<()> {
    let timeout = cfg.train.collective_timeout();
    let id = if env.rank == 0 { Some(unique_id()?) } else { None };
    let id = share_id(&env, id.as_deref(), UNIQUE_ID_BYTES, timeout.max(Duration::from_secs(60)))?;
    let mut coll = NcclCollective::new(&id, env.rank, env.world, env.local_rank, timeout)?;
    let device = tch::Device::Cuda(env.local_rank);
    // Host-side ops are few on a GPU rank; libtorch's default of one OpenMP
    // thread per core in every rank process oversubscribes the host.
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    tch::set_num_threads(cfg.train.threads_per_rank.unwrap_or((cores / env.world.min(cores)).max(1)) as i32);
    let mut log = |line: &str| eprintln!("{line}");
    let lead = if env.rank == 0 { Some(Lead::open(cfg, &mut log)?) } else { None };
    match train_rank(cfg, &mut coll, device, lead) {
        Ok(s) => {
            if env.rank == 0 {
                report(&s, env.world, cfg);
            }
            Ok(())
        }
        // Every rank stopped after the same step: nothing to abort.
        Err(dv_train::TrainError::Stopped { step }) => stopped(step),
        Err(e) => {
            coll.abort(&e.to_string());
            Err(e).with_context(|| format!("rank {} of {}", env.rank, env.world))
        }
    }
}

/// Starts one process per GPU and waits; when a rank fails, the others get
/// the collective timeout (plus a margin) to fail on their own, then are killed.
pub(crate) fn launch(config: &str, steps: Option<u64>, gpus: usize, timeout: Duration) -> anyhow::Result<()> {
    if gpus == 0 {
        bail!("--gpus must be at least 1");
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let exe = std::env::current_exe()?;
    let mut children: Vec<Option<Child>> = (0..gpus)
        .map(|r| {
            Command::new(&exe)
                .args(["train", "--config", config])
                .args(steps.iter().flat_map(|s| ["--steps".to_string(), s.to_string()]))
                .env("RANK", r.to_string())
                .env("WORLD_SIZE", gpus.to_string())
                .env("LOCAL_RANK", r.to_string())
                .env("MASTER_ADDR", "127.0.0.1")
                .env("MASTER_PORT", port.to_string())
                .spawn()
                .map(Some)
        })
        .collect::<Result<_, _>>()?;
    let mut failed: Option<(usize, String, Instant)> = None;
    let grace = timeout + Duration::from_secs(30);
    loop {
        let mut running = 0;
        for (rank, slot) in children.iter_mut().enumerate() {
            let Some(child) = slot else { continue };
            match child.try_wait()? {
                Some(status) => {
                    if !status.success() && failed.is_none() {
                        failed = Some((rank, status.to_string(), Instant::now()));
                    }
                    *slot = None;
                }
                None => running += 1,
            }
        }
        if running == 0 {
            break;
        }
        if let Some((rank, _, at)) = &failed {
            if at.elapsed() > grace {
                eprintln!("rank {rank} failed; stopping the {running} rank(s) still running");
                for child in children.iter_mut().flatten() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if let Some((rank, status, _)) = failed {
        bail!("rank {rank} of {gpus} failed ({status})");
    }
    Ok(())
}
