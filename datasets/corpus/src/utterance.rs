//! The rows of a corpus and of its bad-item report.

use std::fmt;
use std::path::PathBuf;

use crate::reader::CorpusKind;

/// One usable utterance: a row of the manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Utterance {
    /// Unique within the corpus.
    pub id: String,
    pub speaker: String,
    /// Local path (absolute or as given) or object-store URL of the audio.
    pub audio: String,
    /// The transcript as the corpus writes it.
    pub transcript: String,
    /// The transcript after `dv_text::normalize` (words and pause marks).
    pub normalized: String,
    /// Hz.
    pub sample_rate: u32,
    pub channels: u16,
    /// Samples per channel.
    pub samples: u64,
    /// Seconds.
    pub duration: f64,
    /// Ground-truth labels, when the corpus has them.
    pub reference: Option<ReferenceLabels>,
}

/// Phone boundaries and F0 that came with the corpus.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReferenceLabels {
    /// Contiguous phone segments, in order. Empty when the corpus has F0 only.
    pub phones: Vec<PhoneSpan>,
    pub f0: Option<F0Track>,
}

/// One phone and where it lies, in seconds from the start of the audio.
#[derive(Debug, Clone, PartialEq)]
pub struct PhoneSpan {
    /// ARPABET without stress (`AH`, `HH`) or `sil`: a `dv_text::Phoneme` symbol.
    pub phone: String,
    pub start: f64,
    pub end: f64,
}

/// An F0 contour on a uniform grid; 0 marks an unvoiced frame.
#[derive(Debug, Clone, PartialEq)]
pub struct F0Track {
    /// Time of the first frame (its centre), seconds.
    pub start: f64,
    /// Seconds between frames.
    pub step: f64,
    /// Hz per frame, 0 where unvoiced.
    pub hz: Vec<f32>,
}

/// Why an item of a corpus was skipped (or, for labels, kept without them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BadReason {
    /// The audio file named by the index does not exist.
    MissingAudio,
    /// The audio file exists but cannot be read or parsed.
    UnreadableAudio,
    /// The audio holds zero samples.
    EmptyAudio,
    /// The audio header declares more data than the file holds.
    TruncatedAudio,
    /// A sample format or codec the pipeline does not decode.
    UnsupportedAudio,
    /// The transcript is empty or only whitespace.
    EmptyTranscript,
    /// The transcript is not valid UTF-8.
    NonUtf8Transcript,
    /// Audio without any transcript.
    MissingTranscript,
    /// A second item with an id already seen (the first is kept).
    DuplicateId,
    /// An index line that does not parse.
    MalformedIndex,
    /// Reference labels that do not parse: the utterance is kept without them.
    MalformedLabels,
    /// Audio longer than the featurizer takes in one piece
    /// (`dv_featurize::MAX_UTTERANCE_SECONDS`).
    TooLong,
}

impl BadReason {
    /// A stable snake_case name, used in reports and the Parquet report.
    pub fn as_str(self) -> &'static str {
        match self {
            BadReason::MissingAudio => "missing_audio",
            BadReason::UnreadableAudio => "unreadable_audio",
            BadReason::EmptyAudio => "empty_audio",
            BadReason::TruncatedAudio => "truncated_audio",
            BadReason::UnsupportedAudio => "unsupported_audio",
            BadReason::EmptyTranscript => "empty_transcript",
            BadReason::NonUtf8Transcript => "non_utf8_transcript",
            BadReason::MissingTranscript => "missing_transcript",
            BadReason::DuplicateId => "duplicate_id",
            BadReason::MalformedIndex => "malformed_index",
            BadReason::MalformedLabels => "malformed_labels",
            BadReason::TooLong => "too_long",
        }
    }

    /// Whether the utterance was dropped (everything but label problems).
    pub fn skips_utterance(self) -> bool {
        self != BadReason::MalformedLabels
    }
}

impl fmt::Display for BadReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of the bad-item report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadItem {
    /// The utterance id, or `line N` where no id could be read.
    pub item: String,
    /// The file at fault.
    pub file: PathBuf,
    pub reason: BadReason,
    /// The underlying message.
    pub detail: String,
}

/// A corpus read from disk.
#[derive(Debug, Clone)]
pub struct Corpus {
    pub kind: CorpusKind,
    pub root: PathBuf,
    pub utterances: Vec<Utterance>,
    pub bad: Vec<BadItem>,
}
