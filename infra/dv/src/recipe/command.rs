//! `dv recipe run` and `dv recipe status`: walk the stages in order, run
//! the selected ones whose key or outputs changed, and keep the lock.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Args, FromArgMatches, Subcommand};

use super::config::{Gpus, Loaded};
use super::key::parts_of;
use super::lock::{key_of, outputs_digest, Entry, Lock};
use super::plan::ClusterArgs;
use super::stage::{why_run, Ctx, Model, Stage, StageLog};

#[derive(Subcommand)]
pub(crate) enum RecipeCommand {
    /// Write a recipe for a corpus of your own from a preset (finetune by default): corpus,
    /// format and out set, the preset's relative paths made absolute; then `dv recipe run` it.
    New(super::new::NewArgs),
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

/// `dv recipe run`'s arguments: its flags, and `--gpus`, one flag shared with the cluster
/// options (GPUs per node with `--on`; the GPUs this machine's training stages use without).
pub(crate) struct RunArgs {
    flags: RunFlags,
    /// `--gpus` as given without `--on`: overrides the recipe's `gpus`.
    gpus: Option<Gpus>,
}

#[derive(Args)]
struct RunFlags {
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
    cluster: Box<ClusterArgs>,
}

/// The cluster options' `--gpus` (a count per node that needs `--on`), made the one `--gpus` of
/// `dv recipe run`: `all` or a count, with or without `--on`. Its value reaches the cluster
/// options as a count (`all` as 0, refused with `--on`); [`RunArgs`] reads what was typed.
fn shared_gpus(a: Arg) -> Arg {
    a.requires(clap::builder::Resettable::Reset)
        .value_parser(|s: &str| s.parse::<Gpus>().map(|g| if let Gpus::Count(n) = g { n } else { 0 }))
        .hide_default_value(true)
        .value_name("N|all")
        .help(
            "GPUs for the training stages whose run config trains on cuda, one rank (process) each: \
             all (every GPU this process sees) or N; default the recipe's `gpus`, else all. With \
             --on: GPUs per node (default 1)",
        )
}

impl Args for RunArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        RunFlags::augment_args(cmd).mut_arg("gpus", shared_gpus)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        RunFlags::augment_args_for_update(cmd).mut_arg("gpus", shared_gpus)
    }
}

impl FromArgMatches for RunArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Self::from_arg_matches_mut(&mut m.clone())
    }

    fn from_arg_matches_mut(m: &mut ArgMatches) -> Result<Self, clap::Error> {
        let typed = match m.value_source("gpus") {
            Some(ValueSource::CommandLine) => m.get_raw("gpus").and_then(|mut v| v.next()).map(|v| v.to_string_lossy()),
            _ => None,
        };
        let gpus =
            typed.map(|t| t.parse::<Gpus>()).transpose().map_err(|e| clap::Error::raw(ErrorKind::InvalidValue, e))?;
        let flags = RunFlags::from_arg_matches_mut(m)?;
        if flags.cluster.on.is_some() && gpus == Some(Gpus::All) {
            return Err(clap::Error::raw(
                ErrorKind::InvalidValue,
                "--gpus all counts this machine's GPUs; with --on, give the GPUs per node (N)",
            ));
        }
        Ok(RunArgs { gpus: gpus.filter(|_| flags.cluster.on.is_none()), flags })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

pub(crate) fn run(c: RecipeCommand) -> anyhow::Result<()> {
    match c {
        RecipeCommand::Run(a) if a.flags.cluster.on.is_some() => super::emit::run(&a.flags.recipe, &a.flags.cluster),
        RecipeCommand::Run(a) => execute(&a.flags, a.gpus),
        RecipeCommand::Status { recipe } => execute(
            &RunFlags {
                recipe,
                stage: None,
                stop_stage: None,
                dry_run: true,
                force: false,
                force_downstream: false,
                cluster: Default::default(),
            },
            None,
        ),
        RecipeCommand::TrainConfig { recipe, stage, out } => super::emit::train_config(&recipe, &stage, &out),
        RecipeCommand::New(a) => super::new::new(a),
    }
}

fn execute(a: &RunFlags, gpus: Option<Gpus>) -> anyhow::Result<()> {
    let loaded = Loaded::load(&a.recipe)?;
    let gpus = gpus.unwrap_or(loaded.recipe.gpus);
    let out = loaded.out();
    // Every training stage's run config is checked before anything runs.
    for model in Model::ALL {
        loaded.run_config(model.field(), &model.table(&loaded)?, &out, &out)?;
    }
    let logs = out.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    if let (Some(n), false) = (loaded.recipe.make_default, a.dry_run) {
        let dir = PathBuf::from(loaded.resolve(&loaded.recipe.corpus));
        if !dir.exists() {
            println!(
                "[0/{}] making the embedded default corpus ({n} utterances) in {}",
                Stage::ALL.len(),
                dir.display()
            );
            let jobs = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            let tools = dv_corpus::embedded::Tools::default();
            let req = dv_corpus::embedded::Request {
                out: dir,
                utterances: n,
                seed: dv_corpus::embedded::DEFAULT_SEED,
                jobs,
                labels_only: false,
                tools,
            };
            dv_corpus::embedded::make(&req, &mut |_, _| {})?;
        }
    }
    let lock_path = out.join("recipe.lock");
    let mut lock = Lock::load(&lock_path)?;
    let index = |name: &str| name.parse::<Stage>().map(Stage::index);
    let first = a.stage.as_deref().map(index).transpose()?.unwrap_or(0);
    let mut last = a.stop_stage.as_deref().map(index).transpose()?.unwrap_or(Stage::ALL.len() - 1);
    if first > last {
        bail!("--stage {} comes after --stop-stage {}", Stage::ALL[first], Stage::ALL[last]);
    }
    if a.force_downstream {
        last = Stage::ALL.len() - 1;
    }
    let forced = a.force || a.force_downstream;
    let total = Stage::ALL.len();
    let started = Instant::now();
    let (mut ran, mut skipped) = (0, 0);
    let mut would_run: HashSet<Stage> = HashSet::new();
    'stages: for (i, stage) in Stage::ALL.into_iter().enumerate() {
        if i < first || i > last {
            continue;
        }
        let name = stage.name();
        let tag = format!("[{}/{total}] {name}", i + 1);
        for &d in stage.reads() {
            if a.dry_run && would_run.contains(&d) {
                println!("{tag}: would run (upstream {d} runs)");
                would_run.insert(stage);
                continue 'stages;
            }
            if !lock.stages.contains_key(d.name()) {
                if a.dry_run {
                    println!("{tag}: would run (upstream {d} has not run)");
                    would_run.insert(stage);
                    continue 'stages;
                }
                bail!("stage {name} reads the outputs of {d}, which has not run: run --stage {d} first");
            }
        }
        let parts = parts_of(&loaded, stage, &lock)?;
        let Some(why) = why_run(&out, lock.stages.get(name), &parts, forced) else {
            println!("{tag}: skipped (key unchanged, outputs present)");
            skipped += 1;
            continue;
        };
        if a.dry_run {
            println!("{tag}: would run ({why})");
            would_run.insert(stage);
            continue;
        }
        println!("{tag}: running ({why}); log {}", logs.join(format!("{name}.log")).display());
        // A stage that does not finish leaves no lock entry, so it reruns.
        if lock.stages.remove(name).is_some() {
            lock.save(&lock_path)?;
        }
        let key = key_of(&parts);
        let mut log = StageLog::open(&logs.join(format!("{name}.log")))?;
        log.line(&format!("stage {name}: key {key} ({why})"));
        let t = Instant::now();
        let ctx = Ctx { loaded: &loaded, out: out.clone(), lock: &lock, key: &key, gpus, last: Stage::ALL[last] };
        let outputs = match stage.run(&ctx, &mut log) {
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
        if super::train::stop_before_next_stage() {
            bail!("stopped by a signal after {name} had finished (its lock entry is written): run the recipe again to go on");
        }
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
        // What a user came for, when the run got that far.
        let (voice, report) = (out.join("voice"), out.join("report.md"));
        if voice.join("config.json").is_file() && report.is_file() {
            println!(
                "voice {} (dv synth --voice {} \"…\"); report {}",
                voice.display(),
                voice.display(),
                report.display()
            );
        }
    }
    Ok(())
}
