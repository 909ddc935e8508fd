//! Intelligibility: pocketsphinx (python3's `pocketsphinx` package, which
//! bundles its US English models) recognises held-out recordings and the
//! same sentences spoken from text by the exported voice; the word error
//! rate of each against the corpus's normalized transcripts, as
//! `benchmarks/voice/intelligibility.py` measures it (audio resampled to
//! 16 kHz with sox).

use std::path::Path;

use anyhow::{bail, Context};
use serde_json::{json, Value};

/// Recognises each item's `recordings` and `text` WAVs against its
/// `reference` words; prints the WER of each kind as JSON.
const SCRIPT: &str = r#"
import json, re, subprocess, sys, tempfile, wave
import numpy as np
from pocketsphinx import Decoder
items = json.load(open(sys.argv[1]))
d = Decoder(samprate=16000, loglevel="FATAL")
def words(s):
    return re.sub(r"[^a-z' ]", " ", s.lower()).split()
def recognise(path):
    with tempfile.NamedTemporaryFile(suffix=".wav") as t:
        subprocess.run(["sox", "-R", path, "-r", "16000", "-b", "16", "-c", "1", t.name, "rate", "-h"], check=True)
        with wave.open(t.name) as w:
            pcm = w.readframes(w.getnframes())
    d.start_utt(); d.process_raw(pcm, full_utt=True); d.end_utt()
    h = d.hyp()
    return words(h.hypstr) if h else []
def dist(a, b):
    p = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, p[0] = p[0], i
        for j, y in enumerate(b, 1):
            prev, p[j] = p[j], min(p[j] + 1, p[j - 1] + 1, prev + (x != y))
    return p[len(b)]
out = {"recordings": [0, 0], "text": [0, 0], "utterances": []}
for it in items:
    ref = words(it["reference"])
    row = {"id": it["id"]}
    for k in ("recordings", "text"):
        hyp = recognise(it[k])
        e = dist(ref, hyp)
        out[k][0] += e; out[k][1] += len(ref)
        row[k] = " ".join(hyp)
    out["utterances"].append(row)
print(json.dumps({"recordings_wer": out["recordings"][0] / max(out["recordings"][1], 1),
                  "text_wer": out["text"][0] / max(out["text"][1], 1),
                  "words": out["text"][1], "utterances": out["utterances"]}))
"#;

/// Whether python3 can import pocketsphinx.
pub(crate) fn available() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import pocketsphinx, numpy"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// WER of `items` (`id`; `recordings`: a held-out recording's WAV; `text`:
/// the voice's WAV of the same sentence; `reference`: its normalized
/// words), per utterance in `dir/wer.json`.
pub(crate) fn measure(dir: &Path, items: &[Value]) -> anyhow::Result<Value> {
    let input = dir.join("wer-input.json");
    std::fs::write(&input, serde_json::to_string(items)?).with_context(|| format!("writing {}", input.display()))?;
    let o = std::process::Command::new("python3")
        .args(["-c", SCRIPT])
        .arg(&input)
        .output()
        .context("running python3 for pocketsphinx")?;
    if !o.status.success() {
        bail!("pocketsphinx: {}", String::from_utf8_lossy(&o.stderr));
    }
    let v: Value = serde_json::from_slice(&o.stdout).context("reading pocketsphinx's result")?;
    crate::write_atomic(&dir.join("wer.json"), serde_json::to_string_pretty(&v)?.as_bytes())?;
    Ok(json!({ "recordings_wer": v["recordings_wer"], "text_wer": v["text_wer"], "words": v["words"] }))
}
