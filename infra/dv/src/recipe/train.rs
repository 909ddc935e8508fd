//! The training stages: each trains its model where `dv train` would, on
//! the GPUs the recipe gives it or on the CPU (the module docs of
//! [`super`]).

use anyhow::{bail, Context};

use super::stage::{predicts_f0, run_dir, Ctx, Model, Stage, StageLog};

/// The run config a training stage trains with (its run directory named by
/// the stage's key), as the stage and `dv recipe train-config` (a cluster
/// job's) both build it: a WaveNet on predicted F0 (`[data] f0_predicted`)
/// reads the recipe's own duration/F0 model, named here. With a line for
/// the stage's log when it says more than the config file.
pub(crate) fn run_config(model: Model, ctx: &Ctx<'_>) -> anyhow::Result<(dv_train::RunConfig, Option<String>)> {
    let table = model.table(ctx.loaded)?;
    let dir = run_dir(&ctx.out, model, ctx.key);
    let mut cfg = ctx.loaded.run_config(model.field(), &table, &dir, &ctx.training_data(model))?;
    let mut note = None;
    if model == Model::Wavenet && predicts_f0(&table) {
        if let dv_train::DataConfig::Chunks(c) = &mut cfg.data {
            let from = ctx.output(Stage::Train(Model::Duration))?;
            note = Some(format!(
                "F0 predicted by {} for {:.0} % of the training chunks",
                ctx.rel(&from),
                c.f0_predicted * 100.0
            ));
            c.f0_predicted_from = Some(from.display().to_string());
        }
    }
    Ok((cfg, note))
}

/// Trains a stage's model where `dv train` would: a run config with
/// `device = "cuda"` on one rank per GPU ([`super::config::Gpus::ranks`]: one process each
/// with NCCL, through `dv train --gpus`'s launcher, when there are several;
/// in this process when there is one); `device = "cpu"` on the stage's
/// `ranks`, one process each through `dv train --procs`'s launcher when
/// there are several; else (a GPU named `cuda:N`, or `cuda` with no GPU
/// visible) the stage's `ranks` as threads of this process. `[train] batch`
/// is the global batch either way.
pub(crate) fn train(model: Model, ctx: &Ctx<'_>, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
    let name = Stage::Train(model);
    if model == Model::Segmentation {
        enough_utterances(ctx)?;
    }
    let dir = run_dir(&ctx.out, model, ctx.key);
    let (cfg, note) = run_config(model, ctx)?;
    if let Some(note) = note {
        log.line(&note);
    }
    let ck = dir.join("checkpoints").join(format!("step-{:010}.safetensors", cfg.train.steps));
    let gpus = if cfg.train.device == "cuda" {
        let visible = usize::try_from(dv_torch::tch::Cuda::device_count()).unwrap_or(0);
        ctx.gpus.ranks(visible, cfg.train.batch).map_err(|e| anyhow::anyhow!("{name}: {e} (recipe gpus or --gpus)"))?
    } else {
        0
    };
    let (steps, batch) = (cfg.train.steps, cfg.train.batch);
    // CPU ranks are processes too, as `dv train --procs N` starts them (the in-process
    // collective's threads serve one rank, and a GPU named `cuda:N` or `cuda` with none visible).
    let procs = if gpus == 0 && cfg.train.device == "cpu" { model.section(&ctx.loaded.recipe).ranks } else { 0 };
    if gpus > 1 || procs > 1 {
        let (n, flag, what, how) = if gpus > 1 {
            (gpus, "--gpus", "GPU", "one process per GPU, gradients all-reduced with NCCL")
        } else {
            (procs, "--procs", "CPU", "one process per rank, gradients all-reduced over TCP on the loopback")
        };
        log.line(&format!(
            "run directory  {} ({steps} steps, global batch {batch}: {} on each of {n} {what} ranks)",
            dir.display(),
            batch / n
        ));
        if ck.exists() {
            // Trained already (a cluster job's ranks, or a run killed after its last checkpoint).
            log.line(&format!("{} exists: nothing to train", ctx.rel(&ck)));
        } else {
            // The ranks read the run config from a file, as `dv train --config FILE --gpus N`.
            let file = dir.join("run.toml");
            let text = toml::to_string(&cfg).context("writing the run config as TOML")?;
            let back = dv_train::RunConfig::from_toml(&file.display().to_string(), &text)?;
            if toml::to_string(&back)? != text {
                bail!("{name}: the run config does not survive a round trip through TOML");
            }
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            crate::write_atomic(&file, text.as_bytes())?;
            log.line(&format!(
                "dv train --config {} {flag} {n} ({how}; the ranks print to the terminal, metrics in {})",
                file.display(),
                ctx.rel(&dir.join("metrics.jsonl"))
            ));
            let started = std::time::Instant::now();
            crate::train::launch_ranks(&file.display().to_string(), None, n, flag, cfg.train.collective_timeout())
                .with_context(|| format!("{name} on {n} {what} ranks (a rerun resumes from {})", dir.display()))?;
            log.line(&format!(
                "trained to step {steps} on {n} {what} ranks in {:.1} s",
                started.elapsed().as_secs_f64()
            ));
        }
    } else {
        let ranks = if gpus == 1 { 1 } else { model.section(&ctx.loaded.recipe).ranks };
        let on = match (gpus, cfg.train.device.as_str()) {
            (1, _) => "1 GPU".to_string(),
            (_, "cpu") => "1 CPU rank, this process".to_string(),
            (_, "cuda") => format!("the CPU, no GPU visible: {ranks} rank(s), threads of this process"),
            (_, d) => format!("{d}: {ranks} rank(s), threads of this process"),
        };
        log.line(&format!("run directory  {} ({steps} steps, global batch {batch}, on {on})", dir.display()));
        let mut sink = |line: &str| log.line(line);
        let stop = StopOnSignal::install()?;
        let s = match dv_train::train_threads(&cfg, ranks, &mut sink) {
            Err(dv_train::TrainError::Stopped { step }) => bail!(
                "{name}: stopped by a signal after step {step}, with a checkpoint of it in {}: \
                 run the recipe again to resume there",
                ctx.rel(&dir.join("checkpoints"))
            ),
            r => r?,
        };
        drop(stop);
        log.line(&format!(
            "steps {} to {} in {:.1} s, final loss {:.6}",
            s.start_step, s.steps, s.seconds, s.final_loss
        ));
    }
    if !ck.exists() {
        bail!("{name}: training finished but {} is missing", ck.display());
    }
    Ok(vec![ctx.rel(&ck), ctx.rel(&dir.join("metrics.jsonl"))])
}

/// Before the first training stage: refuses a corpus with fewer usable
/// utterances than a batch of a stage this run goes to that trains on
/// utterances (the segmentation and duration/F0 models), naming the stage and what to
/// change, rather than after the stages before that one have trained. The
/// trainer's own check stays the exact one; this one never refuses a
/// corpus that could train (fewer than a batch cannot).
fn enough_utterances(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let manifest = ctx.phones().join("manifest.json");
    let Ok(text) = std::fs::read_to_string(&manifest) else { return Ok(()) };
    let usable = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["utterances"].as_u64())
        .with_context(|| format!("{}: no utterance count", manifest.display()))?;
    let runs = |stage: Stage| {
        let at = |s: Stage| Stage::ALL.iter().position(|&x| x == s);
        at(stage) <= at(ctx.last)
    };
    for model in [Model::Segmentation, Model::Duration].into_iter().filter(|&m| runs(Stage::Train(m))) {
        let (cfg, _) = run_config(model, ctx)?;
        let held_out = match &cfg.data {
            dv_train::DataConfig::Features(f) => f.validation_fraction > 0.0,
            dv_train::DataConfig::Prosody(p) => p.validation_fraction > 0.0,
            _ => continue,
        };
        // The held-out share is drawn by hash, so a small corpus may hold none out: a batch is
        // what surely cannot be trained without.
        if usable < cfg.train.batch as u64 {
            bail!(
                "the corpus has {usable} usable utterance(s) ({}); {} trains on batches of {} utterances{}: \
                 bring more audio, or lower the batch in the recipe ([{}] set.train.batch)",
                ctx.rel(&manifest),
                Stage::Train(model),
                cfg.train.batch,
                if held_out { " and holds some out for validation" } else { "" },
                model.field()
            );
        }
    }
    Ok(())
}

/// While a stage trains in this process, SIGINT (Ctrl-C) and SIGTERM stop it
/// after the current step with a checkpoint of it ([`dv_train::stop_flag`]),
/// as `dv train` stops on SIGTERM, so that a rerun loses nothing; a second
/// signal ends the process at once (exit 130). Outside training the signals
/// act as by default (signal-hook cannot give a handler back, so the
/// handlers stay, and act by default while no stage trains).
struct StopOnSignal;

/// Whether no stage is training in this process (the handlers' condition
/// for the default action).
fn not_training() -> &'static std::sync::Arc<std::sync::atomic::AtomicBool> {
    static FLAG: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> = std::sync::OnceLock::new();
    FLAG.get_or_init(|| std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)))
}

impl StopOnSignal {
    fn install() -> anyhow::Result<Self> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        use signal_hook::flag;
        static INSTALLED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
        if INSTALLED.get().is_none() {
            let stop = dv_train::stop_flag();
            for signal in [SIGINT, SIGTERM] {
                // In this order: the default while not training; the second signal; the first.
                flag::register_conditional_default(signal, not_training().clone())?;
                flag::register_conditional_shutdown(signal, 130, stop.clone())?;
                flag::register(signal, stop.clone())?;
            }
            let _ = INSTALLED.set(());
        }
        // A fresh request per stage: one left from an earlier stage is acted on by then.
        dv_train::stop_flag().store(false, std::sync::atomic::Ordering::SeqCst);
        not_training().store(false, std::sync::atomic::Ordering::SeqCst);
        Ok(Self)
    }
}

impl Drop for StopOnSignal {
    fn drop(&mut self) {
        not_training().store(true, std::sync::atomic::Ordering::SeqCst);
        // A signal during the last step (or after it) stops nothing in the trainer: the stage is
        // complete, and the recipe stops before the next one ([`stop_before_next_stage`]).
        if dv_train::stop_flag().swap(false, std::sync::atomic::Ordering::SeqCst) {
            STOP_BEFORE_NEXT.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

static STOP_BEFORE_NEXT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a signal came while a stage trained but too late to stop it: the
/// recipe then stops once that stage is recorded in the lock.
pub(crate) fn stop_before_next_stage() -> bool {
    STOP_BEFORE_NEXT.load(std::sync::atomic::Ordering::SeqCst)
}
