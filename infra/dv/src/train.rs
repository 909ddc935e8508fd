//! `dv train`: one training run from a TOML config.

use clap::Args;
use dv_train::{train_threads, RunConfig};

#[derive(Args)]
pub(crate) struct TrainArgs {
    /// Run configuration (TOML; see the dv-train crate docs for every key).
    #[arg(long)]
    config: String,
    /// Data-parallel ranks, run as threads of this process with the in-process collective.
    #[arg(long, default_value_t = 1)]
    ranks: usize,
}

pub(crate) fn run(a: TrainArgs) -> anyhow::Result<()> {
    let cfg = RunConfig::load(&a.config)?;
    let mut log = |line: &str| eprintln!("{line}");
    let s = train_threads(&cfg, a.ranks, &mut log)?;
    println!("steps          {} to {} on {} rank(s), {:.1} s", s.start_step, s.steps, a.ranks, s.seconds);
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
    Ok(())
}
