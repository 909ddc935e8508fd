//! The evaluate stage (held-out duration/F0 error, sample WAVs, PNGs) and
//! the report stage (`out/report.md`).

use std::path::Path;

use anyhow::Context;
use serde_json::{json, Value};

use super::run::{duration_error, plot_loss, speak, Ctx, StageLog};

pub(crate) fn evaluate(ctx: &Ctx, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
    let dir = ctx.out.join("evaluate");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir.join("samples"))?;
    let mut notes = Vec::new();
    let duration = duration_error(ctx)?;
    log.line(&format!("held-out duration/F0 error: {duration}"));
    let e = &ctx.loaded.recipe.evaluate;
    let mut samples = Vec::new();
    for (i, text) in e.sentences.iter().enumerate() {
        let wav = dir.join(format!("samples/sample-{i:02}.wav"));
        speak(ctx, text, &wav, e.max_seconds)?;
        log.line(&format!("spoke {text:?} to {}", wav.display()));
        samples.push(json!({ "text": text, "wav": format!("evaluate/samples/sample-{i:02}.wav") }));
    }
    let mut plots = Vec::new();
    for stage in ["train-segmentation", "train-duration", "train-wavenet"] {
        let png = dir.join(format!("loss-{stage}.png"));
        match plot_loss(ctx, stage, &png) {
            Ok(()) => {
                plots.push(json!({ "what": format!("{stage} loss"), "png": format!("evaluate/loss-{stage}.png") }))
            }
            Err(e) => notes.push(format!("no loss curve for {stage}: {e:#}")),
        }
    }
    let aligned = ctx.out.join("aligned/plots");
    if let Ok(rd) = std::fs::read_dir(&aligned) {
        let mut pngs: Vec<_> =
            rd.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned())).collect();
        pngs.sort();
        for p in pngs {
            std::fs::copy(aligned.join(&p), dir.join(format!("align-{p}")))?;
            plots.push(json!({ "what": format!("alignment of {}", p.trim_end_matches(".png")), "png": format!("evaluate/align-{p}") }));
        }
    }
    let wer = if super::wer::available() {
        match intelligibility(ctx, &dir, log) {
            Ok(v) => v,
            Err(e) => {
                notes.push(format!("no intelligibility (WER): {e:#}"));
                Value::Null
            }
        }
    } else {
        notes.push("no intelligibility (WER): python3's pocketsphinx is not installed".into());
        Value::Null
    };
    for n in &notes {
        log.line(n);
    }
    let v = json!({ "duration_f0": duration, "wer": wer, "samples": samples, "plots": plots, "notes": notes });
    crate::write_atomic(&dir.join("evaluate.json"), serde_json::to_string_pretty(&v)?.as_bytes())?;
    Ok(vec!["evaluate".into()])
}

/// Held-out recordings (the WaveNet run's validation split) against the
/// voice speaking their transcripts, recognised by pocketsphinx.
fn intelligibility(ctx: &Ctx, dir: &Path, log: &mut StageLog) -> anyhow::Result<Value> {
    let e = &ctx.loaded.recipe.evaluate;
    let (fraction, seed) = held_out_split(ctx)?;
    let r = &ctx.loaded.recipe;
    let format =
        r.format.as_deref().map(str::parse::<dv_corpus::CorpusKind>).transpose().map_err(|e| anyhow::anyhow!("{e}"))?;
    let corpus = dv_corpus::read(&ctx.loaded.resolve(&r.corpus), format)?;
    let wer_dir = dir.join("wer");
    std::fs::create_dir_all(&wer_dir)?;
    let mut items = Vec::new();
    for u in corpus.utterances.iter().filter(|u| dv_train::is_validation(&u.id, seed, fraction)).take(e.wer_utterances)
    {
        let wav = wer_dir.join(format!("{}.wav", u.id));
        if let Err(err) = speak(ctx, &u.transcript, &wav, e.max_seconds.max(20.0)) {
            log.line(&format!("WER: {} not spoken: {err:#}", u.id));
            continue;
        }
        let recording = corpus.root.join(&u.audio);
        items.push(json!({ "id": u.id, "recordings": recording, "text": wav, "reference": u.normalized }));
    }
    if items.is_empty() {
        anyhow::bail!("no held-out utterance to recognise");
    }
    let v = super::wer::measure(&wer_dir, &items)?;
    log.line(&format!("WER (pocketsphinx, {} held-out utterances): {v}", items.len()));
    Ok(v)
}

/// The WaveNet run's validation fraction and seed.
fn held_out_split(ctx: &Ctx) -> anyhow::Result<(f64, u64)> {
    let t = &ctx.loaded.recipe.train_wavenet;
    let table = ctx.loaded.train_table("train_wavenet", t)?;
    let data = table.get("data").and_then(|d| d.as_table());
    let fraction = data.and_then(|d| d.get("validation_fraction")).and_then(|v| v.as_float()).unwrap_or(0.05);
    let seed = data.and_then(|d| d.get("seed")).and_then(|v| v.as_integer()).unwrap_or(0) as u64;
    Ok((fraction, seed))
}

fn read_json(path: &Path) -> Value {
    std::fs::read_to_string(path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null)
}

/// Top-level numbers and strings of a JSON object as a Markdown list.
fn scalars(v: &Value) -> String {
    let mut s = String::new();
    if let Value::Object(m) = v {
        for (k, x) in m {
            match x {
                Value::Number(n) => s.push_str(&format!("- {k}: {n}\n")),
                Value::String(t) => s.push_str(&format!("- {k}: {t}\n")),
                Value::Bool(b) => s.push_str(&format!("- {k}: {b}\n")),
                _ => {}
            }
        }
    }
    s
}

pub(crate) fn report(ctx: &Ctx, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
    let out = &ctx.out;
    let mut md = format!("# Recipe report: {}\n\n", ctx.loaded.file.display());
    md.push_str(&format!("Corpus `{}`, written {}.\n\n", ctx.loaded.recipe.corpus, crate::utc_now()));
    md.push_str("## Corpus\n\n");
    let bad = std::fs::read_to_string(out.join("bad.tsv")).unwrap_or_default();
    let bad: Vec<&str> = bad.lines().skip(1).collect();
    md.push_str(&format!("Bad items: {} (`bad.tsv`)\n\n", bad.len()));
    for b in bad.iter().take(20) {
        md.push_str(&format!("- `{}`\n", b.replace('\t', " | ")));
    }
    md.push('\n');
    let f = read_json(&out.join("featurize.json"));
    md.push_str(&format!("Featurized:\n\n{}", scalars(&f)));
    if let Some(m) = f.get("skipped").and_then(Value::as_object) {
        for (k, n) in m {
            md.push_str(&format!("- skipped {k}: {n}\n"));
        }
    }
    md.push_str("\n## Alignment\n\n");
    md.push_str(&scalars(&read_json(&out.join("aligned/report.json"))));
    let q = std::fs::read_to_string(out.join("aligned/quarantine.tsv")).unwrap_or_default();
    md.push_str(&format!("- quarantined: {} (`aligned/quarantine.tsv`)\n", q.lines().skip(1).count()));
    let e = read_json(&out.join("evaluate/evaluate.json"));
    md.push_str("\n## Held-out duration/F0 error\n\n");
    md.push_str(&scalars(&e["duration_f0"]));
    md.push_str("\n## Intelligibility (pocketsphinx WER, held-out recordings against the voice from text)\n\n");
    if e["wer"].is_null() {
        md.push_str("Not measured (see the notes).\n");
    } else {
        md.push_str(&scalars(&e["wer"]));
        md.push_str("- per utterance: `evaluate/wer/wer.json`\n");
    }
    md.push_str("\n## Samples (spoken from text by `voice/`)\n\n");
    for s in e["samples"].as_array().into_iter().flatten() {
        md.push_str(&format!("- [{}]({})\n", s["text"].as_str().unwrap_or(""), s["wav"].as_str().unwrap_or("")));
    }
    md.push_str("\n## Pictures\n\n");
    for p in e["plots"].as_array().into_iter().flatten() {
        md.push_str(&format!("![{}]({})\n\n", p["what"].as_str().unwrap_or(""), p["png"].as_str().unwrap_or("")));
    }
    md.push_str("## Notes\n\n");
    for n in e["notes"].as_array().into_iter().flatten() {
        md.push_str(&format!("- {}\n", n.as_str().unwrap_or("")));
    }
    crate::write_atomic(&out.join("report.md"), md.as_bytes())?;
    log.line(&format!("report {}", out.join("report.md").display()));
    Ok(vec!["report.md".into()])
}
