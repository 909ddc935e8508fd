//! How each stage runs ([`Stage::run`]), in-process through the code paths
//! of the `dv` verb of the same name; the work of inspect, featurize, align,
//! g2p and export (the training stages' is [`super::train`]'s, evaluate's
//! and report's [`super::report`]'s).

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context};
use dv_featurize::format::{first_id, read_reference, rewrite};
use dv_manifest::{bad_items_frame, utterances_frame, write_parquet, Summary};
use dv_train::alignment::{self, AlignOptions};
use dv_train::export::{add_duration, add_g2p, export_wavenet, WavenetExport, GOLDEN_FRAMES, GOLDEN_WORDS};
use serde_json::json;

use super::config::Labels;
use super::stage::{Ctx, Model, Stage, StageLog};

impl Stage {
    /// Runs the stage; returns its outputs relative to `out`.
    pub(crate) fn run(self, ctx: &Ctx<'_>, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
        match self {
            Stage::Inspect => inspect(ctx, log),
            Stage::Featurize => featurize(ctx, log),
            Stage::Train(model) => super::train::train(model, ctx, log),
            Stage::Align => align(ctx, log),
            Stage::G2p => g2p(ctx, log),
            Stage::Export => export(ctx, log),
            Stage::Evaluate => super::report::evaluate(ctx, log),
            Stage::Report => super::report::report(ctx, log),
        }
    }
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

fn inspect(ctx: &Ctx<'_>, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
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

fn featurize(ctx: &Ctx<'_>, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
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
    for b in &report.dropped {
        log.line(&format!("  dropped: {} {} [{}]: {}", b.item, b.file.display(), b.reason, b.detail));
    }
    if !report.manifest_written {
        bail!("featurize: shards missing, the features manifest was not written");
    }
    let summary = json!({
        "utterances": report.utterances,
        "audio_hours": report.audio_seconds / 3600.0,
        "chunks": report.chunks,
        "skipped": report.skipped,
        // What this run dropped that inspect had passed (bad.tsv has inspect's own).
        "dropped": report.dropped.iter().map(|b| json!({
            "item": b.item, "file": b.file.display().to_string(), "reason": b.reason.as_str(), "detail": b.detail,
        })).collect::<Vec<_>>(),
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
    let (with, without) = rewrite(Path::new(&ctx.features()), &ctx.phones(), &|id| {
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

fn align(ctx: &Ctx<'_>, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
    let a = &ctx.loaded.recipe.align;
    let ck = ctx.output(Stage::Train(Model::Segmentation))?;
    let dir = ctx.out.join("aligned");
    fresh_dir(&dir)?;
    let features = s(ctx.phones());
    let plots = if a.plot.is_empty() {
        vec![first_id(Path::new(&features))?.with_context(|| format!("{features}: no utterances"))?]
    } else {
        a.plot.clone()
    };
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
    let mut options = AlignOptions::new(features, ck, &dir);
    options.device = dv_train::device_of(&a.device)?;
    options.batch = a.batch;
    options.quarantine_k = a.quarantine_k.unwrap_or(options.quarantine_k);
    options.plots = plots;
    // Progress on stderr and the report on stdout, as `dv align` prints them.
    let started = Instant::now();
    let r = alignment::align(&options, &mut |line: &str| eprintln!("{line}"))?;
    println!("{}", r.summary(&options));
    println!("output         {} ({:.1} s)", options.out.display(), started.elapsed().as_secs_f64());
    // The duration/F0 model and the WaveNet train on the aligner's phones
    // and times, quarantined utterances left out.
    let aligned = super::relabel::read_alignments(&dir.join(alignment::ALIGNMENTS))?;
    let (with, without) = rewrite(&ctx.phones(), &ctx.aligned(), &|id| {
        aligned.get(id).map(|(p, st, en)| (p.clone(), Some((st.clone(), en.clone()))))
    })?;
    log.line(&format!("features-aligned: {with} utterances with the aligner's phones and times, {without} without (quarantined or not aligned)"));
    if ctx.loaded.recipe.labels == Labels::Text {
        // The corpus's own labels, when it has them, only score the aligner.
        let labels = read_reference(Path::new(&ctx.features()))?;
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

fn g2p(ctx: &Ctx<'_>, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
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

fn export(ctx: &Ctx<'_>, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
    let wavenet = ctx.output(Stage::Train(Model::Wavenet))?;
    let duration = ctx.output(Stage::Train(Model::Duration))?;
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
    let g2p = if ctx.lock.stages.get(Stage::G2p.name()).is_some_and(|e| !e.outputs.is_empty()) {
        Some(ctx.output(Stage::G2p)?)
    } else {
        None
    };
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
