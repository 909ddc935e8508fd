//! The segmented Blizzard Challenge 2013 English release (Lessac, one
//! speaker): `prompts.gui` and `wavn/<id>.wav` (some copies say `wav/`).
//! `prompts.gui` holds blocks of three lines: the utterance id
//! (`CA-BB-01-01`), the transcript with prosodic markup tokens `@`, `#`, `|`
//! and space-separated punctuation, and a third line of markup that is not
//! read. A block is recognised by its id line (one token, no spaces, with a
//! dash); the reader resynchronises on the next id line after a bad block.

use std::path::Path;

use crate::collect::{byte_lines, Candidate, Collector};
use crate::{BadReason, CorpusError};

fn is_id_line(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    !t.is_empty() && t.contains(&b'-') && t.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')
}

/// Removes the markup tokens and re-attaches tokenised punctuation:
/// `Hello @ world , he said #` → `Hello world, he said`.
pub(crate) fn clean_transcript(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for tok in raw.split_whitespace() {
        if tok.chars().all(|c| matches!(c, '@' | '#' | '|')) {
            continue;
        }
        let attach = tok.chars().next().is_some_and(|c| matches!(c, ',' | '.' | '!' | '?' | ';' | ':'))
            || tok.starts_with("'s")
            || tok.starts_with("n't");
        if !out.is_empty() && !attach {
            out.push(' ');
        }
        out.push_str(tok);
    }
    out
}

pub(crate) fn read(root: &Path) -> Result<Collector, CorpusError> {
    let index = root.join("prompts.gui");
    let bytes = super::read_index(&index, "Blizzard 2013")?;
    let audio_dir = if root.join("wavn").is_dir() { root.join("wavn") } else { root.join("wav") };
    let lines: Vec<&[u8]> = byte_lines(&bytes).collect();
    let mut out = Collector::default();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].iter().all(u8::is_ascii_whitespace) {
            i += 1;
            continue;
        }
        if !is_id_line(lines[i]) {
            let detail = format!("line {}: expected an utterance id line", i + 1);
            out.bad(format!("line {}", i + 1), &index, BadReason::MalformedIndex, detail);
            i += 1;
            while i < lines.len() && !is_id_line(lines[i]) {
                i += 1;
            }
            continue;
        }
        let id = String::from_utf8_lossy(lines[i].trim_ascii()).into_owned();
        let raw = lines.get(i + 1).copied().unwrap_or(b"");
        let transcript = match std::str::from_utf8(raw) {
            Ok(s) => clean_transcript(s).into_bytes(),
            Err(_) => raw.to_vec(),
        };
        out.push(Candidate {
            audio: audio_dir.join(format!("{id}.wav")),
            id,
            speaker: "blizzard2013".into(),
            transcript,
            transcript_file: index.clone(),
            normalize_from: None,
            reference: None,
        });
        // Skip the transcript and the markup line, tolerating a block that
        // lacks its third line.
        i += 2;
        if i < lines.len() && !is_id_line(lines[i]) {
            i += 1;
        }
    }
    Ok(out)
}
