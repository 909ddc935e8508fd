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
    let sphinx = std::process::Command::new("python3")
        .args(["-c", "import pocketsphinx"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    notes.push(if sphinx {
        "pocketsphinx is installed, but the recipe does not measure WER yet (benchmarks/voice/intelligibility.py does)"
            .into()
    } else {
        "no intelligibility (WER): python3's pocketsphinx is not installed".to_string()
    });
    for n in &notes {
        log.line(n);
    }
    let v = json!({ "duration_f0": duration, "samples": samples, "plots": plots, "notes": notes });
    crate::write_atomic(&dir.join("evaluate.json"), serde_json::to_string_pretty(&v)?.as_bytes())?;
    Ok(vec!["evaluate".into()])
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
