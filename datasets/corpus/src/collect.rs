//! The checks every reader shares: transcript, duplicate id, audio header.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use dv_audio::AudioError;

use crate::{BadItem, BadReason, ReferenceLabels, Utterance};

/// What a reader found for one utterance, before any check.
pub(crate) struct Candidate {
    pub id: String,
    pub speaker: String,
    pub audio: PathBuf,
    /// The transcript's raw bytes, and the file they came from.
    pub transcript: Vec<u8>,
    pub transcript_file: PathBuf,
    /// Text to normalize instead of the transcript (LJSpeech's own
    /// normalized column), when the corpus has one.
    pub normalize_from: Option<String>,
    pub reference: Option<ReferenceLabels>,
}

/// Accumulates utterances and bad items, checking each candidate.
#[derive(Default)]
pub(crate) struct Collector {
    pub utterances: Vec<Utterance>,
    pub bad: Vec<BadItem>,
    seen: HashSet<String>,
}

impl Collector {
    pub fn bad(&mut self, item: impl Into<String>, file: &Path, reason: BadReason, detail: impl Into<String>) {
        self.bad.push(BadItem { item: item.into(), file: file.to_path_buf(), reason, detail: detail.into() });
    }

    pub fn push(&mut self, c: Candidate) {
        if self.seen.contains(&c.id) {
            let detail = format!("id {} appears more than once; the first is kept", c.id);
            self.bad(&c.id, &c.transcript_file, BadReason::DuplicateId, detail);
            return;
        }
        self.seen.insert(c.id.clone());
        let transcript = match String::from_utf8(c.transcript) {
            Ok(t) => t.trim().to_string(),
            Err(e) => {
                let detail = format!("invalid UTF-8 at byte {}", e.utf8_error().valid_up_to());
                self.bad(&c.id, &c.transcript_file, BadReason::NonUtf8Transcript, detail);
                return;
            }
        };
        if transcript.is_empty() {
            self.bad(&c.id, &c.transcript_file, BadReason::EmptyTranscript, "transcript is empty");
            return;
        }
        let info = match dv_audio::probe(&c.audio) {
            Ok(info) => info,
            Err(e) => {
                let reason = match &e {
                    AudioError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                        BadReason::MissingAudio
                    }
                    AudioError::Io { .. } | AudioError::Malformed { .. } => BadReason::UnreadableAudio,
                    AudioError::Resample { .. } | AudioError::Config { .. } => BadReason::UnsupportedAudio,
                    AudioError::Truncated { .. } => BadReason::TruncatedAudio,
                    AudioError::Empty { .. } => BadReason::EmptyAudio,
                    AudioError::Unsupported { .. } => BadReason::UnsupportedAudio,
                };
                self.bad(&c.id, &c.audio, reason, e.to_string());
                return;
            }
        };
        let normalized = dv_text::normalize(c.normalize_from.as_deref().unwrap_or(&transcript)).text();
        if normalized.is_empty() {
            let detail = format!("transcript {transcript:?} has no speakable words");
            self.bad(&c.id, &c.transcript_file, BadReason::EmptyTranscript, detail);
            return;
        }
        self.utterances.push(Utterance {
            id: c.id,
            speaker: c.speaker,
            audio: c.audio.to_string_lossy().into_owned(),
            transcript,
            normalized,
            sample_rate: info.sample_rate,
            channels: info.channels,
            samples: info.frames,
            duration: info.duration(),
            reference: c.reference,
        });
    }
}

/// Splits file bytes into lines (LF or CRLF), keeping them as bytes so that
/// one non-UTF-8 line does not spoil the others.
pub(crate) fn byte_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes.split(|b| *b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l))
}
