//! Corpus readers and the embedded default corpus.
//!
//! Every corpus, whatever its layout, is read into one list of
//! [`Utterance`]s (the rows of the manifest, see `dv-manifest` for its Arrow
//! schema) and one list of [`BadItem`]s: what could not be used, with the
//! file and the reason. Bad input never stops a corpus: a missing or
//! unreadable audio file, a zero-length or truncated WAV, an unsupported
//! sample format, an empty or non-UTF-8 transcript, a duplicate id, a
//! malformed index line: each is recorded, skipped and counted. Only a
//! corpus whose index itself cannot be found or read is an error
//! ([`CorpusError`]).
//!
//! # Layouts read
//!
//! | [`CorpusKind`] | layout |
//! | --- | --- |
//! | `LjSpeech` | `metadata.csv` (`id\|text\|normalized text`, no quoting) + `wavs/<id>.wav` |
//! | `Arctic` | `etc/txt.done.data` (`( id "text" )`) + `wav/<id>.wav`, optional `lab/<id>.lab` (xwaves labels) and `f0/<id>.f0` (EST ascii track) |
//! | `Blizzard2013` | segmented release: `prompts.gui` (blocks of id line, transcript line, markup line) + `wavn/<id>.wav` (or `wav/`) |
//! | `Vctk` | `txt/<spk>/<id>.txt` + `wav48/<spk>/<id>.wav` (original) or `wav48_silence_trimmed/<spk>/<id>_mic1.flac` (0.92) |
//! | `Table` | a `.tsv` or `.csv` file: `path, text[, speaker]`, optional header; paths relative to the file |
//!
//! Utterances come out in index order (directory readers sort by name), so
//! reading is deterministic. Audio headers are probed (rate, channels,
//! length) but not decoded.
//!
//! # The embedded default corpus
//!
//! [`embedded`] renders a corpus from Debian packages alone, with exact
//! ground truth: festival's text analysis of sentences from `fortunes`,
//! rendered by `hts_engine` with the CMU ARCTIC slt HTS voice. See its docs.
#![forbid(unsafe_code)]

mod collect;
pub mod embedded;
mod error;
mod label;
mod reader;
mod utterance;

pub use error::CorpusError;
pub use label::{parse_est_f0, parse_xwaves_lab, write_est_f0, write_xwaves_lab, LabelError};
pub use reader::{detect, read, CorpusKind};
pub use utterance::{BadItem, BadReason, Corpus, F0Track, PhoneSpan, ReferenceLabels, Utterance};
