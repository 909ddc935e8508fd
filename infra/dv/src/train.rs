//! `dv train`: one training run from a TOML config, on CPU ranks (threads of
//! this process, or processes joined over TCP) or GPU ranks (one process per
//! GPU, NCCL).

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use dv_nccl::{unique_id, NcclCollective, UNIQUE_ID_BYTES};
use dv_torch::tch;
use dv_train::{share_id, train_process, train_rank, train_threads, Collective, Lead, RankEnv, RunConfig, RunSummary};

#[derive(Args)]
pub(crate) struct TrainArgs {
    /// Run configuration (TOML; every key: docs/run-config.md).
    #[arg(long)]
    config: String,
    /// CPU data-parallel ranks, run as threads of this process with the in-process collective.
    #[arg(long, default_value_t = 1, conflicts_with_all = ["gpus", "procs"])]
    ranks: usize,
    /// CPU data-parallel ranks as processes of this machine, one rank each, joined by the TCP
    /// collective (rank 0 the hub on a free loopback port): the same parameters, bit for bit,
    /// as --ranks N, each rank in a process of its own (what a run over hosts does; a rank
    /// that dies fails the run naming it). Needs [train] device = "cpu". Across hosts, start
    /// one `dv train` per rank with RANK, WORLD_SIZE, MASTER_ADDR (rank 0's address) and
    /// MASTER_PORT set (torchrun, or srun with SLURM_PROCID/SLURM_NTASKS) instead.
    #[arg(long, conflicts_with = "gpus")]
    procs: Option<usize>,
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
    let cpu = cfg.train.device == "cpu";
    match (&env, a.gpus, a.procs) {
        (None, Some(_), _) if cpu => bail!("{}: --gpus with [train] device = \"cpu\": pass --procs N", a.config),
        (None, _, Some(_)) if !cpu => {
            bail!("{}: --procs runs CPU ranks, [train] device = {:?}: pass --gpus N", a.config, cfg.train.device)
        }
        (None, Some(n), _) => return launch(&a.config, a.steps, n, cfg.train.collective_timeout()),
        (None, _, Some(n)) => return launch_ranks(&a.config, a.steps, n, "--procs", cfg.train.collective_timeout()),
        _ => {}
    }
    // SIGTERM: stop after the current step with a checkpoint of it (dv_train::stop_flag).
    signal_hook::flag::register(signal_hook::consts::SIGTERM, dv_train::stop_flag())
        .context("installing the SIGTERM handler")?;
    match env {
        // One task of a launcher (srun, torchrun, --procs) training on the
        // CPU: with others, one rank joined to them over TCP; alone, this
        // process's threads, as without a launcher.
        Some(env) if cpu && env.world > 1 => return cpu_rank(&cfg, env),
        Some(env) if !cpu => return gpu_rank(&cfg, env),
        _ => {}
    }
    let mut log = |line: &str| eprintln!("{line}");
    let s = match train_threads(&cfg, a.ranks, &mut log) {
        Err(dv_train::TrainError::Stopped { step }) => stopped(step),
        r => r?,
    };
    report(&s, a.ranks, &cfg);
    Ok(())
}

/// One CPU rank of a multi-process run: the TCP collective, the shared loop.
fn cpu_rank(cfg: &RunConfig, env: RankEnv) -> anyhow::Result<()> {
    let mut log = |line: &str| eprintln!("{line}");
    match train_process(cfg, &env, &mut log) {
        Ok(s) => {
            if env.rank == 0 {
                report(&s, env.world, cfg);
            }
            Ok(())
        }
        Err(dv_train::TrainError::Stopped { step }) => stopped(step),
        Err(e) => Err(e).with_context(|| format!("rank {} of {}", env.rank, env.world)),
    }
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

/// Starts one process per GPU and waits: [`launch_ranks`] for `--gpus`.
pub(crate) fn launch(config: &str, steps: Option<u64>, gpus: usize, timeout: Duration) -> anyhow::Result<()> {
    launch_ranks(config, steps, gpus, "--gpus", timeout)
}

/// Starts one process per rank (`flag`: `--gpus`, one per GPU, or
/// `--procs`, CPU ranks) and waits; when a rank fails, the others get the
/// collective timeout (plus a margin) to fail on their own, then are killed.
pub(crate) fn launch_ranks(config: &str, steps: Option<u64>, ranks: usize, flag: &str, timeout: Duration) -> anyhow::Result<()> {
    if ranks == 0 {
        bail!("{flag} must be at least 1");
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let exe = std::env::current_exe()?;
    let mut children: Vec<Option<Child>> = (0..ranks)
        .map(|r| {
            Command::new(&exe)
                .args(["train", "--config", config])
                .args(steps.iter().flat_map(|s| ["--steps".to_string(), s.to_string()]))
                .env("RANK", r.to_string())
                .env("WORLD_SIZE", ranks.to_string())
                .env("LOCAL_RANK", r.to_string())
                .env("LOCAL_WORLD_SIZE", ranks.to_string())
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
        let mut ended = Vec::new();
        for (rank, slot) in children.iter_mut().enumerate() {
            let Some(child) = slot else { continue };
            match child.try_wait()? {
                Some(status) => {
                    if !status.success() {
                        ended.push((rank, status));
                    }
                    *slot = None;
                }
                None => running += 1,
            }
        }
        // The first rank to fail is the cause; of two seen in one poll, one
        // killed by a signal rather than one that exited on the news.
        if let (None, Some((rank, status))) =
            (&failed, ended.iter().find(|(_, s)| s.signal().is_some()).or(ended.first()))
        {
            failed = Some((*rank, status.to_string(), Instant::now()));
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
        bail!("rank {rank} of {ranks} failed ({status})");
    }
    Ok(())
}
