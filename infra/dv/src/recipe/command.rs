//! `dv recipe run` and `dv recipe status`: walk the stages in order, run
//! the selected ones whose key or outputs changed, and keep the lock.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

use super::config::Loaded;
use super::lock::{key_of, outputs_digest, Entry, Lock};
use super::run::{parts_of, stage, Ctx, StageLog};
use super::stage::{index_of, why_run, STAGES};

#[derive(Subcommand)]
pub(crate) enum RecipeCommand {
    /// Run the recipe's stages (each skipped when its inputs, config and code are unchanged).
    Run(RunArgs),
    /// Each stage and why it would run or be skipped (the same as `run --dry-run`).
    Status {
        /// The recipe file (TOML).
        recipe: PathBuf,
    },
    /// Write the run config a training stage trains with (for one `dv train` per GPU under a
    /// scheduler; the stages it reads must have run).
    TrainConfig {
        /// The recipe file (TOML).
        recipe: PathBuf,
        /// train-segmentation, train-duration or train-wavenet.
        #[arg(long)]
        stage: String,
        /// The run config to write (TOML).
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Args)]
pub(crate) struct RunArgs {
    /// The recipe file (TOML; see the presets in infra/recipes/).
    recipe: PathBuf,
    /// Start at this stage (inspect, featurize, train-segmentation, align, train-duration, g2p,
    /// train-wavenet, export, evaluate, report).
    #[arg(long)]
    stage: Option<String>,
    /// Stop after this stage.
    #[arg(long)]
    stop_stage: Option<String>,
    /// Print each stage and why it would run or be skipped; run nothing.
    #[arg(long)]
    dry_run: bool,
    /// Rerun the selected stages even when their keys are unchanged.
    #[arg(long)]
    force: bool,
    /// Rerun the selected stages and every stage after them.
    #[arg(long)]
    force_downstream: bool,
    #[command(flatten)]
    cluster: Box<super::emit::ClusterArgs>,
}

pub(crate) fn run(c: RecipeCommand) -> anyhow::Result<()> {
    match c {
        RecipeCommand::Run(a) if a.cluster.on.is_some() => super::emit::run(&a.recipe, &a.cluster),
        RecipeCommand::Run(a) => execute(&a),
        RecipeCommand::Status { recipe } => execute(&RunArgs {
            recipe,
            stage: None,
            stop_stage: None,
            dry_run: true,
            force: false,
            force_downstream: false,
            cluster: Default::default(),
        }),
        RecipeCommand::TrainConfig { recipe, stage, out } => super::emit::train_config(&recipe, &stage, &out),
    }
}

fn execute(a: &RunArgs) -> anyhow::Result<()> {
    let loaded = Loaded::load(&a.recipe)?;
    let out = loaded.out();
    // Every training stage's run config is checked before anything runs.
    for (field, t) in loaded.recipe.train_stages() {
        let table = loaded.train_table(field, t)?;
        loaded.run_config(field, &table, &out, &out)?;
    }
    let logs = out.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    if let (Some(n), false) = (loaded.recipe.make_default, a.dry_run) {
        let dir = PathBuf::from(loaded.resolve(&loaded.recipe.corpus));
        if !dir.exists() {
            println!("[0/{}] making the embedded default corpus ({n} utterances) in {}", STAGES.len(), dir.display());
            let jobs = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            let tools = dv_corpus::recipe::Tools::default();
            let req = dv_corpus::recipe::Request {
                out: dir,
                utterances: n,
                seed: dv_corpus::recipe::DEFAULT_SEED,
                jobs,
                labels_only: false,
                tools,
            };
            dv_corpus::recipe::make(&req, &mut |_, _| {})?;
        }
    }
    let lock_path = out.join("recipe.lock");
    let mut lock = Lock::load(&lock_path)?;
    let first = a.stage.as_deref().map(index_of).transpose()?.unwrap_or(0);
    let mut last = a.stop_stage.as_deref().map(index_of).transpose()?.unwrap_or(STAGES.len() - 1);
    if first > last {
        bail!("--stage {} comes after --stop-stage {}", STAGES[first].0, STAGES[last].0);
    }
    if a.force_downstream {
        last = STAGES.len() - 1;
    }
    let forced = a.force || a.force_downstream;
    let total = STAGES.len();
    let started = Instant::now();
    let (mut ran, mut skipped) = (0, 0);
    let mut would_run: HashSet<&str> = HashSet::new();
    'stages: for (i, (name, deps)) in STAGES.iter().enumerate() {
        if i < first || i > last {
            continue;
        }
        let tag = format!("[{}/{total}] {name}", i + 1);
        for d in *deps {
            if a.dry_run && would_run.contains(d) {
                println!("{tag}: would run (upstream {d} runs)");
                would_run.insert(name);
                continue 'stages;
            }
            if !lock.stages.contains_key(*d) {
                if a.dry_run {
                    println!("{tag}: would run (upstream {d} has not run)");
                    would_run.insert(name);
                    continue 'stages;
                }
                bail!("stage {name} reads the outputs of {d}, which has not run: run --stage {d} first");
            }
        }
        let parts = parts_of(&loaded, name, &lock)?;
        let Some(why) = why_run(&out, lock.stages.get(*name), &parts, forced) else {
            println!("{tag}: skipped (key unchanged, outputs present)");
            skipped += 1;
            continue;
        };
        if a.dry_run {
            println!("{tag}: would run ({why})");
            would_run.insert(name);
            continue;
        }
        println!("{tag}: running ({why}); log {}", logs.join(format!("{name}.log")).display());
        // A stage that does not finish leaves no lock entry, so it reruns.
        if lock.stages.remove(*name).is_some() {
            lock.save(&lock_path)?;
        }
        let key = key_of(&parts);
        let mut log = StageLog::open(&logs.join(format!("{name}.log")))?;
        log.line(&format!("stage {name}: key {key} ({why})"));
        let t = Instant::now();
        let ctx = Ctx { loaded: &loaded, out: out.clone(), lock: &lock, key: &key };
        let outputs = match stage(name, &ctx, &mut log) {
            Ok(o) => o,
            Err(e) => {
                log.line(&format!("failed: {e:#}"));
                return Err(e.context(format!("stage {name} (log: {})", logs.join(format!("{name}.log")).display())));
            }
        };
        let output_digest = outputs_digest(&out, &outputs)?;
        log.line(&format!("done in {:.1} s: {}", t.elapsed().as_secs_f64(), outputs.join(", ")));
        lock.stages.insert(name.to_string(), Entry { key, parts, outputs, output_digest, finished: crate::utc_now() });
        lock.save(&lock_path)?;
        ran += 1;
        println!(
            "{tag}: done in {:.1} s (recipe {:.1} s so far)",
            t.elapsed().as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
    }
    if a.dry_run {
        println!("dry run: {} stage(s) would run, {skipped} skipped", would_run.len());
    } else {
        println!(
            "recipe {}: {ran} stage(s) run, {skipped} skipped in {:.1} s; lock {}",
            a.recipe.display(),
            started.elapsed().as_secs_f64(),
            lock_path.display()
        );
    }
    Ok(())
}
