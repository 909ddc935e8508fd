//! A generic manifest table: `.tsv` (tab-separated, no quoting) or `.csv`
//! (comma-separated, RFC 4180 quoting), one utterance per row with the
//! columns `path`, `text` and optionally `speaker`. A first row naming
//! those columns (`path`/`audio`/`wav`/`file`, `text`/`transcript`/
//! `sentence`, `speaker`) is a header and may order them freely; otherwise
//! the columns are positional. In a `.csv`, a row with more non-empty
//! fields than the columns is refused (unquoted commas in the text split
//! it), and so is, without a header, a speaker of several words or one that
//! starts with a space (the tail of such a text, most likely).
//! Relative paths are relative to the table's
//! directory. The id is the audio file's name without extension when no two
//! audio files of the table share it (LJSpeech's and Piper's ids), else the
//! path relative to the table's directory without extension, `/` written
//! `-` (ids name files: TextGrids, plots, samples); the speaker defaults to
//! `default`.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::collect::{Candidate, Collector};
use crate::{BadReason, CorpusError};

struct Columns {
    path: usize,
    text: usize,
    speaker: Option<usize>,
}

fn header(row: &csv::ByteRecord) -> Option<Columns> {
    let names: Vec<String> = row.iter().map(|f| String::from_utf8_lossy(f).trim().to_ascii_lowercase()).collect();
    let find = |cands: &[&str]| names.iter().position(|n| cands.contains(&n.as_str()));
    let path = find(&["path", "audio", "wav", "file", "audio_path", "filepath"])?;
    let text = find(&["text", "transcript", "sentence", "transcription"])?;
    Some(Columns { path, text, speaker: find(&["speaker", "speaker_id", "spk"]) })
}

pub(crate) fn read(file: &Path) -> Result<Collector, CorpusError> {
    let bytes = super::read_index(file, "table")?;
    let tsv = file.extension().and_then(|e| e.to_str()).is_some_and(|e| !e.eq_ignore_ascii_case("csv"));
    let mut rb = csv::ReaderBuilder::new();
    rb.has_headers(false).flexible(true).delimiter(if tsv { b'\t' } else { b',' });
    if tsv {
        rb.quoting(false);
    }
    let base = file.parent().unwrap_or(Path::new("."));
    let mut out = Collector::default();
    let mut rows = Vec::new();
    let mut cols = Columns { path: 0, text: 1, speaker: Some(2) };
    // A header's width; without one, path, text and speaker.
    let (mut width, mut positional) = (3, true);
    for (n, row) in rb.from_reader(bytes.as_slice()).byte_records().enumerate() {
        let line = n + 1;
        let row = match row {
            Ok(r) => r,
            Err(e) => {
                out.bad(format!("line {line}"), file, BadReason::MalformedIndex, e.to_string());
                continue;
            }
        };
        if n == 0 {
            if let Some(h) = header(&row) {
                cols = h;
                (width, positional) = (row.len(), false);
                continue;
            }
        }
        if row.iter().all(|f| f.trim_ascii().is_empty()) {
            continue;
        }
        // Unquoted commas in a .csv text split it: refused, not silently cut short.
        let quote = if tsv { "" } else { " (quote a text that holds commas: \"Turn left, then right.\")" };
        // Trailing empty fields (a spreadsheet's padding) are not fields; in a .tsv, where a tab
        // cannot be part of a text, further columns are left unread.
        let fields = row.iter().rposition(|f| !f.trim_ascii().is_empty()).map_or(0, |i| i + 1);
        if fields > width && !tsv {
            let detail = format!("line {line}: {fields} fields, more than the {width} columns{quote}");
            out.bad(format!("line {line}"), file, BadReason::MalformedIndex, detail);
            continue;
        }
        // Words, or a field that starts with a space (`a.wav,Yes, sir`): the tail of a text.
        let spoken_speaker = cols
            .speaker
            .and_then(|i| row.get(i))
            .filter(|s| s.trim_ascii().contains(&b' ') || s.first().is_some_and(u8::is_ascii_whitespace));
        if let (Some(s), true, false) = (spoken_speaker, positional, tsv) {
            let s = String::from_utf8_lossy(s.trim_ascii());
            let detail = format!("line {line}: the speaker column holds {s:?}, words, not a speaker id{quote}");
            out.bad(format!("line {line}"), file, BadReason::MalformedIndex, detail);
            continue;
        }
        let (Some(path), Some(text)) = (row.get(cols.path), row.get(cols.text)) else {
            let detail = format!("line {line}: expected at least the columns path and text");
            out.bad(format!("line {line}"), file, BadReason::MalformedIndex, detail);
            continue;
        };
        let Ok(rel) = std::str::from_utf8(path.trim_ascii()) else {
            out.bad(format!("line {line}"), file, BadReason::MalformedIndex, "audio path is not UTF-8");
            continue;
        };
        let rel_path = Path::new(rel);
        let id = rel_path.with_extension("").to_string_lossy().trim_start_matches("./").to_string();
        let speaker = cols
            .speaker
            .and_then(|i| row.get(i))
            .map(|s| String::from_utf8_lossy(s).trim().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "default".into());
        rows.push(Candidate {
            audio: if rel_path.is_absolute() { rel_path.to_path_buf() } else { base.join(rel_path) },
            id,
            speaker,
            transcript: text.to_vec(),
            transcript_file: file.to_path_buf(),
            normalize_from: None,
            reference: None,
        });
    }
    // File names as ids unless two different files share one.
    let mut paths_of: HashMap<String, HashSet<String>> = HashMap::new();
    for c in &rows {
        paths_of.entry(stem_of(&c.id).to_string()).or_default().insert(c.id.clone());
    }
    let stems_unique = paths_of.values().all(|p| p.len() == 1);
    for mut c in rows {
        c.id = if stems_unique {
            stem_of(&c.id).to_string()
        } else {
            c.id.replace(['/', '\\'], "-").trim_start_matches('-').to_string()
        };
        out.push(c);
    }
    Ok(out)
}

/// The last component of a relative id (`wav/ked_001` → `ked_001`).
fn stem_of(id: &str) -> &str {
    id.rsplit(['/', '\\']).next().unwrap_or(id)
}
