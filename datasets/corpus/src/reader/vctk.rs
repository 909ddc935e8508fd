//! VCTK, both releases:
//!
//! * original (`VCTK-Corpus`): `txt/<spk>/<id>.txt` and `wav48/<spk>/<id>.wav`;
//! * 0.92: `txt/<spk>/<id>.txt` and
//!   `wav48_silence_trimmed/<spk>/<id>_mic1.flac` (the DPA 4035, the same
//!   microphone as the original release; `_mic2` files are not read).
//!
//! The speaker is the directory name (`p225`, `s5`). Transcripts are one
//! line. Audio with no transcript (all of p315, for one) is reported as
//! `missing_transcript`; a transcript with no audio as `missing_audio`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::collect::{Candidate, Collector};
use crate::{BadReason, CorpusError};

pub(crate) fn read(root: &Path) -> Result<Collector, CorpusError> {
    let (audio_root, suffix) = if root.join("wav48_silence_trimmed").is_dir() {
        (root.join("wav48_silence_trimmed"), "_mic1.flac")
    } else {
        (root.join("wav48"), ".wav")
    };
    let mut out = Collector::default();
    let mut with_text: HashSet<String> = HashSet::new();
    for spk_dir in super::sorted_entries(&root.join("txt"))?.into_iter().filter(|p| p.is_dir()) {
        let speaker = spk_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        for txt in super::sorted_entries(&spk_dir)? {
            if txt.extension().and_then(|e| e.to_str()) != Some("txt") {
                continue;
            }
            let id = txt.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            with_text.insert(id.clone());
            let transcript = match std::fs::read(&txt) {
                Ok(b) => b,
                Err(e) => {
                    out.bad(&id, &txt, BadReason::MalformedIndex, format!("cannot read transcript: {e}"));
                    continue;
                }
            };
            out.push(Candidate {
                audio: audio_root.join(&speaker).join(format!("{id}{suffix}")),
                id,
                speaker: speaker.clone(),
                transcript,
                transcript_file: txt,
                normalize_from: None,
                reference: None,
            });
        }
    }
    if audio_root.is_dir() {
        for spk_dir in super::sorted_entries(&audio_root)?.into_iter().filter(|p| p.is_dir()) {
            for audio in super::sorted_entries(&spk_dir)? {
                let name = audio.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let Some(id) = name.strip_suffix(suffix) else { continue };
                if !with_text.contains(id) {
                    let txt: PathBuf =
                        root.join("txt").join(spk_dir.file_name().unwrap_or_default()).join(format!("{id}.txt"));
                    let detail = format!("no transcript {}", txt.display());
                    out.bad(id, &audio, BadReason::MissingTranscript, detail);
                }
            }
        }
    }
    Ok(out)
}
