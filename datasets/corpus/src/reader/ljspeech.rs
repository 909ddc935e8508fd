//! LJSpeech: `metadata.csv` with `id|transcript|normalized transcript` per
//! line (pipe-separated, no quoting, UTF-8, no header; the third column
//! may be left out, a fourth is refused) and `wavs/<id>.wav`.
//! One speaker, `LJ`. The third column is what gets normalized when present
//! (it already spells out numbers); the second is kept as the transcript.

use std::path::Path;

use crate::collect::{byte_lines, Candidate, Collector};
use crate::{BadReason, CorpusError};

pub(crate) fn read(root: &Path) -> Result<Collector, CorpusError> {
    let index = root.join("metadata.csv");
    let bytes = super::read_index(&index, "LJSpeech")?;
    let mut out = Collector::default();
    for (n, line) in byte_lines(&bytes).enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let mut fields: Vec<&[u8]> = line.split(|b| *b == b'|').collect();
        // A trailing `|` (an empty last field) is not a field.
        while fields.len() > 2 && fields.last().is_some_and(|f| f.trim_ascii().is_empty()) {
            fields.pop();
        }
        let id = String::from_utf8_lossy(fields[0]).trim().to_string();
        if !(2..=3).contains(&fields.len()) || id.is_empty() {
            // More than three: a `|` in a transcript would cut it short, so the row is refused.
            let detail = format!("line {}: {} fields; expected `id|transcript|normalized`", n + 1, fields.len());
            out.bad(format!("line {}", n + 1), &index, BadReason::MalformedIndex, detail);
            continue;
        }
        let normalize_from = fields
            .get(2)
            .and_then(|f| std::str::from_utf8(f).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        out.push(Candidate {
            audio: root.join("wavs").join(format!("{id}.wav")),
            id,
            speaker: "LJ".into(),
            transcript: fields[1].to_vec(),
            transcript_file: index.clone(),
            normalize_from,
            reference: None,
        });
    }
    Ok(out)
}
