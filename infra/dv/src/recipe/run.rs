//! Each stage's work, through the code paths of the `dv` verb of the same
//! name, in-process; and what each stage's key is made of.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use dv_manifest::{bad_items_frame, utterances_frame, write_parquet, Summary};
use dv_train::export::{add_duration, add_g2p, export_wavenet, WavenetExport, GOLDEN_FRAMES, GOLDEN_WORDS};
use dv_train::{DataConfig, Prosody};
use polars::prelude::*;
use serde_json::json;

use super::config::{Gpus, Labels, Loaded, TrainStage};
use super::lock::{path_digest, sha256_hex, Lock};
use super::stage::STAGES;

/// A stage's log: `out/logs/<stage>.log`, each line also on stderr.
pub(crate) struct StageLog {
    file: File,
}

impl StageLog {
    pub fn open(path: &Path) -> anyhow::Result<StageLog> {
        let file = File::options()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        Ok(StageLog { file })
    }

    pub fn line(&mut self, line: &str) {
        eprintln!("{line}");
        let _ = writeln!(self.file, "{} {line}", crate::utc_now());
    }
}

/// What one stage needs: the recipe, its output directory, the lock (for
/// the outputs of the stages before), the stage's key and the GPUs its
/// training may use (the recipe's `gpus`, or `--gpus`).
pub(crate) struct Ctx<'a> {
    pub loaded: &'a Loaded,
    pub out: PathBuf,
    pub lock: &'a Lock,
    pub key: &'a str,
    pub gpus: Gpus,
}

impl Ctx<'_> {
    /// The first output of an earlier stage (a training stage's checkpoint).
    fn output(&self, stage: &str) -> anyhow::Result<PathBuf> {
        let e = self.lock.stages.get(stage).with_context(|| format!("stage {stage} has not run"))?;
        let first = e.outputs.first().with_context(|| format!("stage {stage} wrote nothing"))?;
        Ok(self.out.join(first))
    }

    fn features(&self) -> String {
        self.out.join("features").display().to_string()
    }

    /// The featurize output whose phones the segmentation model and the aligner read.
    fn phones(&self) -> PathBuf {
        match self.loaded.recipe.labels {
            Labels::Text => self.out.join("features-text"),
            Labels::Corpus => self.out.join("features"),
        }
    }

    /// The featurize output with the aligner's phones and times.
    fn aligned(&self) -> PathBuf {
        self.out.join("features-aligned")
    }

    fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.out).unwrap_or(p).display().to_string()
    }
}

fn train_stage<'a>(loaded: &'a Loaded, name: &str) -> (&'static str, &'a TrainStage) {
    let r = &loaded.recipe;
    match name {
        "train-segmentation" => ("train_segmentation", &r.train_segmentation),
        "train-duration" => ("train_duration", &r.train_duration),
        _ => ("train_wavenet", &r.train_wavenet),
    }
}

/// The three parts of stage `name`'s key: `config`, `inputs`, `code`. A
/// training stage's config is its run config alone: neither its CPU `ranks`
/// nor the GPU count enter it, since `[train] batch` is the global batch
/// split among the ranks (the same updates up to float summation order), so
/// a recipe resumed with another number of ranks or GPUs skips what is done
/// and resumes a killed run from its checkpoints.
pub(crate) fn parts_of(loaded: &Loaded, name: &str, lock: &Lock) -> anyhow::Result<BTreeMap<String, String>> {
    let r = &loaded.recipe;
    let config = match name {
        "inspect" => json!({ "corpus": r.corpus, "format": r.format }),
        "featurize" => json!({ "corpus": r.corpus, "format": r.format, "featurize": r.featurize }),
        "train-segmentation" | "train-duration" | "train-wavenet" => {
            let (field, t) = train_stage(loaded, name);
            json!({ "run": loaded.train_table(field, t)? })
        }
        "align" => json!(r.align),
        "g2p" => json!(loaded.g2p_model()),
        "export" => json!(r.export),
        "evaluate" => json!(r.evaluate),
        _ => json!({}),
    };
    let inputs = match name {
        "inspect" => super::corpus::digest(loaded)?,
        // Phones from the transcripts ask the G2P model for words missing
        // from CMUDict: a changed model reruns featurize (its finished
        // shards are kept) and every stage after it.
        "featurize" => match (r.labels, loaded.g2p_model()) {
            (Labels::Text, Some(m)) => {
                let text =
                    format!("corpus\t{}\ng2p\t{}\n", super::corpus::digest(loaded)?, path_digest(Path::new(&m))?);
                sha256_hex(text.as_bytes())
            }
            _ => super::corpus::digest(loaded)?,
        },
        "g2p" => match loaded.g2p_model() {
            Some(m) => path_digest(Path::new(&m))?,
            None => "none".into(),
        },
        _ => {
            let deps = STAGES.iter().find(|(n, _)| *n == name).map(|(_, d)| *d).unwrap_or_default();
            let mut s = String::new();
            // A fine-tuned model's starting weights are an input too.
            if let (Some(init), "train-duration" | "train-wavenet") = (&r.init, name) {
                let from = loaded.resolve(init);
                let digest =
                    if from.contains("://") { sha256_hex(from.as_bytes()) } else { path_digest(Path::new(&from))? };
                s.push_str(&format!("init\t{digest}\n"));
            }
            let mut deps = deps.to_vec();
            // A WaveNet conditioned on predicted F0 reads the duration/F0 model too.
            if name == "train-wavenet" && predicts_f0(&loaded.train_table("train_wavenet", &r.train_wavenet)?) {
                deps.push("train-duration");
            }
            for d in deps {
                let e = lock.stages.get(d).with_context(|| format!("stage {d} has not run"))?;
                s.push_str(&format!("{d}\t{}\n", e.output_digest));
            }
            sha256_hex(s.as_bytes())
        }
    };
    let mut parts = BTreeMap::new();
    parts.insert("config".to_string(), sha256_hex(serde_json::to_string(&config)?.as_bytes()));
    parts.insert("inputs".to_string(), inputs);
    parts.insert("code".to_string(), sha256_hex(super::lock::code_version().as_bytes()));
    Ok(parts)
}

/// Whether a WaveNet stage's table asks for chunks conditioned on predicted
/// F0 (`[data] f0_predicted` > 0) without naming the duration/F0 checkpoint:
/// the recipe's own train-duration output is then an input of the stage.
fn predicts_f0(table: &toml::Table) -> bool {
    let data = table.get("data").and_then(|d| d.as_table());
    let share =
        data.and_then(|d| d.get("f0_predicted")).and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)));
    share.is_some_and(|p| p > 0.0) && data.is_some_and(|d| !d.contains_key("f0_predicted_from"))
}

fn s(p: impl AsRef<Path>) -> String {
    p.as_ref().display().to_string()
}

fn fresh_dir(p: &Path) -> anyhow::Result<()> {
    if p.exists() {
        std::fs::remove_dir_all(p).with_context(|| format!("removing {}", p.display()))?;
    }
    std::fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))
}

/// Runs stage `name`; returns its outputs relative to `out`.
pub(crate) fn stage(name: &str, ctx: &Ctx, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
    match name {
        "inspect" => inspect(ctx, log),
        "featurize" => featurize(ctx, log),
        "train-segmentation" | "train-duration" | "train-wavenet" => train(name, ctx, log),
        "align" => align(ctx, log),
        "g2p" => g2p(ctx, log),
        "export" => export(ctx, log),
        "evaluate" => super::report::evaluate(ctx, log),
        "report" => super::report::report(ctx, log),
        _ => bail!("no stage {name:?}"),
    }
}

fn inspect(ctx: &Ctx, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
    let r = &ctx.loaded.recipe;
    let format =
        r.format.as_deref().map(str::parse::<dv_corpus::CorpusKind>).transpose().map_err(|e| anyhow::anyhow!("{e}"))?;
    let corpus = dv_corpus::read(&super::corpus::local(ctx.loaded, log)?, format)?;
    let lexicon = crate::text::load_lexicon(None).ok().map(|(_, l)| l);
    let mut df = utterances_frame(&corpus.utterances)?;
    write_parquet(&mut df, &ctx.out.join("manifest.parquet"))?;
    let mut bad = bad_items_frame(&corpus.bad)?;
    write_parquet(&mut bad, &ctx.out.join("manifest.bad.parquet"))?;
    log.line(&format!("corpus         {} ({})", corpus.root.display(), corpus.kind));
    for line in Summary::of(&corpus.utterances, &corpus.bad, lexicon.as_ref()).to_string().lines() {
        log.line(line);
    }
    let mut tsv = String::from("item\tfile\treason\tdetail\n");
    for b in &corpus.bad {
        log.line(&format!("  bad: {} {} [{}]: {}", b.item, b.file.display(), b.reason, b.detail));
        tsv.push_str(&format!(
            "{}\t{}\t{}\t{}\n",
            b.item,
            b.file.display(),
            b.reason,
            b.detail.replace(['\t', '\n'], " ")
        ));
    }
    crate::write_atomic(&ctx.out.join("bad.tsv"), tsv.as_bytes())?;
    Ok(vec!["manifest.parquet".into(), "manifest.bad.parquet".into(), "bad.tsv".into()])
}

fn featurize(ctx: &Ctx, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
    let r = &ctx.loaded.recipe;
    let jobs = r.featurize.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    let job = dv_featurize::Job {
        corpus: super::corpus::local(ctx.loaded, log)?,
        out: ctx.features(),
        staging: Some(crate::dv_home().join("staging")),
        shards: r.featurize.shards,
        only: None,
        jobs,
        sample_rate: r.featurize.sample_rate,
    };
    let mut last = std::time::Instant::now();
    let report = dv_featurize::run(&job, &mut |p| {
        if p.utterances_done == p.utterances_total || last.elapsed().as_secs_f64() >= 10.0 {
            last = std::time::Instant::now();
            eprintln!("featurizing {}/{} utterances", p.utterances_done, p.utterances_total);
        }
    })?;
    log.line(&format!(
        "shards {} of {} written, {} already complete; {} utterances ({:.3} h), {} chunks",
        report.shards_written,
        report.shards_total,
        report.shards_skipped,
        report.utterances,
        report.audio_seconds / 3600.0,
        report.chunks
    ));
    for (reason, n) in &report.skipped {
        log.line(&format!("skipped {reason}: {n}"));
    }
    if !report.manifest_written {
        bail!("featurize: shards missing, the features manifest was not written");
    }
    let summary = json!({
        "utterances": report.utterances,
        "audio_hours": report.audio_seconds / 3600.0,
        "chunks": report.chunks,
        "skipped": report.skipped,
    });
    crate::write_atomic(&ctx.out.join("featurize.json"), serde_json::to_string_pretty(&summary)?.as_bytes())?;
    if r.labels == Labels::Corpus {
        return Ok(vec!["features".into(), "featurize.json".into()]);
    }
    let format =
        r.format.as_deref().map(str::parse::<dv_corpus::CorpusKind>).transpose().map_err(|e| anyhow::anyhow!("{e}"))?;
    let corpus = dv_corpus::read(&job.corpus, format)?;
    let (_, lexicon) = crate::text::load_lexicon(None)?;
    let model = ctx.loaded.g2p_model();
    let texts: Vec<(&str, &str)> = corpus.utterances.iter().map(|u| (u.id.as_str(), u.transcript.as_str())).collect();
    let t = super::relabel::phones_of_texts(&texts, &lexicon, model.as_deref().map(Path::new))?;
    let (with, without) = super::relabel::rewrite(Path::new(&ctx.features()), &ctx.phones(), &|id| {
        t.phones.get(id).cloned().flatten().map(|p| (p, None))
    })?;
    let source = match &model {
        Some(m) => format!("CMUDict, then the G2P model {m} for words missing from it"),
        None => "CMUDict alone: no [g2p] model".into(),
    };
    log.line(&format!(
        "phones from the transcripts ({source}; the corpus's labels ignored): {with} utterances, {without} left out"
    ));
    if !t.g2p_words.is_empty() {
        let examples: Vec<String> = t.g2p_words.iter().take(10).map(|(w, n)| format!("{w} ({n})")).collect();
        log.line(&format!(
            "G2P: {} distinct words missing from CMUDict pronounced by the model, in {} utterances; e.g. {}",
            t.g2p_words.len(),
            t.g2p_utterances,
            examples.join(", ")
        ));
    }
    for (id, why) in t.left_out.iter().take(20) {
        log.line(&format!("  left out: {id}: {why}"));
    }
    Ok(vec!["features".into(), "featurize.json".into(), "features-text".into()])
}

/// The directory of a training stage's run: its checkpoints and metrics,
/// named by the stage's key so that a changed config starts afresh and a
/// killed run resumes.
pub(crate) fn run_dir(out: &Path, name: &str, key: &str) -> PathBuf {
    out.join("runs").join(name).join(&key[..12])
}

/// Trains a stage's model where `dv train` would: a run config with
/// `device = "cuda"` on one rank per GPU ([`Gpus::ranks`]: one process each
/// with NCCL, through `dv train --gpus`'s launcher, when there are several;
/// in this process when there is one), else (the CPU, a GPU named
/// `cuda:N`, or `cuda` with no GPU visible) the stage's `ranks` as threads
/// of this process. `[train] batch` is the global batch either way.
fn train(name: &str, ctx: &Ctx, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
    let (field, t) = train_stage(ctx.loaded, name);
    let table = ctx.loaded.train_table(field, t)?;
    let dir = run_dir(&ctx.out, name, ctx.key);
    let data = if name == "train-segmentation" { ctx.phones() } else { ctx.aligned() };
    let mut cfg = ctx.loaded.run_config(field, &table, &dir, &data)?;
    if name == "train-wavenet" && predicts_f0(&table) {
        if let dv_train::DataConfig::Chunks(c) = &mut cfg.data {
            let from = ctx.output("train-duration")?;
            log.line(&format!(
                "F0 predicted by {} for {:.0} % of the training chunks",
                ctx.rel(&from),
                c.f0_predicted * 100.0
            ));
            c.f0_predicted_from = Some(from.display().to_string());
        }
    }
    let ck = dir.join("checkpoints").join(format!("step-{:010}.safetensors", cfg.train.steps));
    let gpus = if cfg.train.device == "cuda" {
        let visible = usize::try_from(dv_torch::tch::Cuda::device_count()).unwrap_or(0);
        ctx.gpus.ranks(visible, cfg.train.batch).map_err(|e| anyhow::anyhow!("{name}: {e} (recipe gpus or --gpus)"))?
    } else {
        0
    };
    let (steps, batch) = (cfg.train.steps, cfg.train.batch);
    if gpus > 1 {
        log.line(&format!(
            "run directory  {} ({steps} steps, global batch {batch}: {} on each of {gpus} GPU ranks)",
            dir.display(),
            batch / gpus
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
                "dv train --config {} --gpus {gpus} (one process per GPU, gradients all-reduced with NCCL; \
                 the ranks print to the terminal, metrics in {})",
                file.display(),
                ctx.rel(&dir.join("metrics.jsonl"))
            ));
            let started = std::time::Instant::now();
            crate::train::launch(&file.display().to_string(), None, gpus, cfg.train.collective_timeout())
                .with_context(|| format!("{name} on {gpus} GPU ranks (a rerun resumes from {})", dir.display()))?;
            log.line(&format!(
                "trained to step {steps} on {gpus} GPU ranks in {:.1} s",
                started.elapsed().as_secs_f64()
            ));
        }
    } else {
        let ranks = if gpus == 1 { 1 } else { t.ranks };
        let on = match (gpus, cfg.train.device.as_str()) {
            (1, _) => "1 GPU".to_string(),
            (_, "cpu") => format!("{ranks} CPU rank(s), threads of this process"),
            (_, "cuda") => format!("the CPU, no GPU visible: {ranks} rank(s), threads of this process"),
            (_, d) => format!("{d}: {ranks} rank(s), threads of this process"),
        };
        log.line(&format!("run directory  {} ({steps} steps, global batch {batch}, on {on})", dir.display()));
        let mut sink = |line: &str| log.line(line);
        let s = dv_train::train_threads(&cfg, ranks, &mut sink)?;
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

/// The first utterance id in the featurized shards.
pub(crate) fn first_id(features: &str) -> anyhow::Result<String> {
    for shard in crate::align::shard_files(features)? {
        let file = File::open(&shard).with_context(|| format!("opening {}", shard.display()))?;
        let df = ParquetReader::new(file).with_columns(Some(vec!["id".to_string()])).finish()?;
        if let Some(id) = df.column("id")?.str()?.get(0) {
            return Ok(id.to_string());
        }
    }
    bail!("{features}: no utterances")
}

fn align(ctx: &Ctx, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
    let a = &ctx.loaded.recipe.align;
    let ck = ctx.output("train-segmentation")?;
    let dir = ctx.out.join("aligned");
    fresh_dir(&dir)?;
    let features = s(ctx.phones());
    let plots = if a.plot.is_empty() { vec![first_id(&features)?] } else { a.plot.clone() };
    // The log line shows the `dv align` command that does the same.
    let mut argv = vec!["--features".into(), features.clone(), "--checkpoint".into(), s(&ck), "--out".into(), s(&dir)];
    argv.extend(["--device".into(), a.device.clone(), "--batch".into(), a.batch.to_string()]);
    if let Some(k) = a.quarantine_k {
        argv.extend(["--quarantine-k".into(), k.to_string()]);
    }
    for p in &plots {
        argv.extend(["--plot".into(), p.clone()]);
    }
    log.line(&format!("dv align {}", argv.join(" ")));
    let mut options = dv_train::alignment::AlignOptions::new(features, ck, &dir);
    options.device = dv_train::device_of(&a.device)?;
    options.batch = a.batch;
    options.quarantine_k = a.quarantine_k.unwrap_or(options.quarantine_k);
    options.plots = plots;
    crate::align::align(&options)?;
    // The duration/F0 model and the WaveNet train on the aligner's phones
    // and times, quarantined utterances left out.
    let aligned = super::relabel::read_alignments(&dir.join("alignments.parquet"))?;
    let (with, without) = super::relabel::rewrite(&ctx.phones(), &ctx.aligned(), &|id| {
        aligned.get(id).map(|(p, st, en)| (p.clone(), Some((st.clone(), en.clone()))))
    })?;
    log.line(&format!("features-aligned: {with} utterances with the aligner's phones and times, {without} without (quarantined or not aligned)"));
    if ctx.loaded.recipe.labels == Labels::Text {
        // The corpus's own labels, when it has them, only score the aligner.
        let labels = super::relabel::read_reference(Path::new(&ctx.features()))?;
        if !labels.is_empty() {
            let score = super::relabel::score_against_labels(&labels, &aligned)?;
            let file = dir.join("report.json");
            let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            let mut report: serde_json::Value = serde_json::from_str(&text)?;
            report["corpus_labels_phones_differ"] = json!(score.phones_differ);
            report["corpus_labels_without"] = json!(score.without_labels);
            if let Some(s) = &score.summary {
                report["corpus_labels_utterances_scored"] = json!(s.utterances);
                report["corpus_labels_boundaries"] = json!(s.boundaries);
                report["corpus_labels_mean_abs_ms"] = json!(s.mean_abs_ms);
                report["corpus_labels_mean_signed_ms"] = json!(s.mean_signed_ms);
                report["corpus_labels_within_20ms"] = json!(s.within_20ms);
                report["corpus_labels_within_25ms"] = json!(s.within_25ms);
                log.line(&format!(
                    "against the corpus's labels: {} boundaries in {} utterances, mean |error| {:.1} ms (shift {:+.1} ms), within 20/25 ms {:.1}% / {:.1}%; {} utterances not scored (their labels name other phones than the transcripts)",
                    s.boundaries, s.utterances, s.mean_abs_ms, s.mean_signed_ms, 100.0 * s.within_20ms, 100.0 * s.within_25ms, score.phones_differ
                ));
            } else {
                log.line(&format!(
                    "against the corpus's labels: nothing to score ({} utterances' labels name other phones than the transcripts)",
                    score.phones_differ
                ));
            }
            crate::write_atomic(&file, serde_json::to_string_pretty(&report)?.as_bytes())?;
        }
    }
    Ok(vec!["aligned".into(), "features-aligned".into()])
}

fn g2p(ctx: &Ctx, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
    let dir = ctx.out.join("g2p");
    fresh_dir(&dir)?;
    let Some(from) = ctx.loaded.g2p_model() else {
        log.line("no [g2p] model: the voice speaks lexicon words only");
        return Ok(vec![]);
    };
    std::fs::copy(&from, dir.join("g2p.safetensors")).with_context(|| format!("copying {from}"))?;
    log.line(&format!("G2P model {from}"));
    Ok(vec!["g2p/g2p.safetensors".into()])
}

fn export(ctx: &Ctx, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
    let wavenet = ctx.output("train-wavenet")?;
    let duration = ctx.output("train-duration")?;
    let (only, voice) = (ctx.out.join("voice-wavenet"), ctx.out.join("voice"));
    for d in [&only, &voice] {
        if d.exists() {
            std::fs::remove_dir_all(d).with_context(|| format!("removing {}", d.display()))?;
        }
    }
    // What `dv export` would do with the arguments logged, through the same library calls.
    let (features, half) = (s(ctx.aligned()), ctx.loaded.recipe.export.half);
    log.line(&format!(
        "dv export --checkpoint {} --features {features} --out {}{}",
        s(&wavenet),
        s(&only),
        if half { " --half" } else { "" }
    ));
    let exported = export_wavenet(&WavenetExport {
        checkpoint: wavenet,
        out: only.clone(),
        features: Some(features.clone()),
        duration: None,
        half,
        golden_frames: GOLDEN_FRAMES,
        created: crate::utc_now(),
    })?;
    println!("{exported}");
    let g2p =
        if ctx.lock.stages.get("g2p").is_some_and(|e| !e.outputs.is_empty()) { Some(ctx.output("g2p")?) } else { None };
    log.line(&format!(
        "dv export --voice {} --duration {} --features {features}{} --out {}",
        s(&only),
        s(&duration),
        g2p.as_ref().map_or(String::new(), |g| format!(" --g2p {}", s(g))),
        s(&voice)
    ));
    println!("{}", add_duration(&only, &duration, Some(features.as_str()), &voice)?);
    if let Some(g) = &g2p {
        println!("{}", add_g2p(&voice, g, GOLDEN_WORDS, &voice)?);
    }
    std::fs::remove_dir_all(&only).with_context(|| format!("removing {}", only.display()))?;
    Ok(vec!["voice".into()])
}

/// Held-out duration/F0 error of the trained duration model, as `dv evaluate` prints it.
pub(crate) fn duration_error(ctx: &Ctx) -> anyhow::Result<serde_json::Value> {
    let ck = ctx.output("train-duration")?;
    let (field, t) = train_stage(ctx.loaded, "train-duration");
    let table = ctx.loaded.train_table(field, t)?;
    // Against the corpus's labels when the recipe uses them, else against
    // the aligner's times (the held-out utterances of the same split).
    let data = match ctx.loaded.recipe.labels {
        Labels::Corpus => PathBuf::from(ctx.features()),
        Labels::Text => ctx.aligned(),
    };
    let cfg = ctx.loaded.run_config(field, &table, &ctx.out, &data)?;
    let DataConfig::Prosody(data) = cfg.data else { bail!("{field}: [data] kind must be \"prosody\"") };
    let (model, step) = dv_train::export::load_duration(&ck)?;
    let split = Prosody::load(&data, model.config.duration.f0_points)?;
    let m = dv_train::prosody::evaluate(&model, &split.validation)?;
    let mut v = serde_json::to_value(m)?;
    v["step"] = json!(step);
    Ok(v)
}
