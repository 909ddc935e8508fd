//! CMU ARCTIC and festvox voices: `etc/txt.done.data` with one
//! `( id "transcript" )` per line, `wav/<id>.wav`, and optional reference
//! labels `lab/<id>.lab` (xwaves phone labels) and `f0/<id>.f0` (EST ascii
//! F0 track). The speaker is taken from a directory named festvox's way,
//! `cmu_<lang>_<spk>_…` (`cmu_us_slt_arctic` → `slt`), else the directory's
//! name.

use std::path::Path;

use crate::collect::{byte_lines, Candidate, Collector};
use crate::label::{parse_est_f0, parse_xwaves_lab};
use crate::{BadReason, CorpusError, ReferenceLabels};

/// Splits `( id "text" )` into the id and the text's bytes (with `\"`
/// unescaped).
fn parse_prompt(line: &[u8]) -> Option<(String, Vec<u8>)> {
    let s = line.trim_ascii();
    let inner = s.strip_prefix(b"(")?.strip_suffix(b")")?.trim_ascii();
    let q1 = inner.iter().position(|b| *b == b'"')?;
    let q2 = inner.iter().rposition(|b| *b == b'"')?;
    if q2 <= q1 {
        return None;
    }
    let id = std::str::from_utf8(inner[..q1].trim_ascii()).ok()?.to_string();
    if id.is_empty() || id.contains(char::is_whitespace) {
        return None;
    }
    let mut text = Vec::with_capacity(q2 - q1);
    let raw = &inner[q1 + 1..q2];
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' && raw.get(i + 1) == Some(&b'"') {
            i += 1;
        }
        text.push(raw[i]);
        i += 1;
    }
    Some((id, text))
}

fn speaker_of(root: &Path) -> String {
    let name = root
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "arctic".into());
    let parts: Vec<&str> = name.split('_').collect();
    match parts.as_slice() {
        ["cmu", _lang, spk, ..] if !spk.is_empty() => spk.to_string(),
        _ => name,
    }
}

pub(crate) fn read(root: &Path) -> Result<Collector, CorpusError> {
    let index = root.join("etc/txt.done.data");
    let bytes = super::read_index(&index, "CMU ARCTIC")?;
    let speaker = speaker_of(root);
    let mut out = Collector::default();
    for (n, line) in byte_lines(&bytes).enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Some((id, transcript)) = parse_prompt(line) else {
            let detail = format!("line {}: expected `( id \"text\" )`", n + 1);
            out.bad(format!("line {}", n + 1), &index, BadReason::MalformedIndex, detail);
            continue;
        };
        let reference = read_reference(root, &id, &mut out);
        out.push(Candidate {
            audio: root.join("wav").join(format!("{id}.wav")),
            id,
            speaker: speaker.clone(),
            transcript,
            transcript_file: index.clone(),
            normalize_from: None,
            reference,
        });
    }
    Ok(out)
}

/// Reads `lab/<id>.lab` and `f0/<id>.f0` when they exist. A file that does
/// not parse is reported and left out; the utterance keeps the rest.
fn read_reference(root: &Path, id: &str, out: &mut Collector) -> Option<ReferenceLabels> {
    let mut r = ReferenceLabels::default();
    let lab = root.join("lab").join(format!("{id}.lab"));
    if lab.is_file() {
        match std::fs::read_to_string(&lab)
            .map_err(|e| e.to_string())
            .and_then(|t| parse_xwaves_lab(&t).map_err(|e| e.to_string()))
        {
            Ok(spans) => r.phones = spans,
            Err(e) => out.bad(id, &lab, BadReason::MalformedLabels, e),
        }
    }
    let f0 = root.join("f0").join(format!("{id}.f0"));
    if f0.is_file() {
        match std::fs::read_to_string(&f0)
            .map_err(|e| e.to_string())
            .and_then(|t| parse_est_f0(&t).map_err(|e| e.to_string()))
        {
            Ok(track) => r.f0 = Some(track),
            Err(e) => out.bad(id, &f0, BadReason::MalformedLabels, e),
        }
    }
    (!r.phones.is_empty() || r.f0.is_some()).then_some(r)
}
