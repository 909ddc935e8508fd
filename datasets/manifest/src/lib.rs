//! The corpus manifest: one Arrow schema for every corpus, held as a Polars
//! `DataFrame` and stored as Parquet.
//!
//! # Schema
//!
//! One row per usable utterance ([`dv_corpus::Utterance`]):
//!
//! | column | Arrow type | meaning |
//! | --- | --- | --- |
//! | `id` | utf8 | utterance id, unique in the corpus |
//! | `speaker` | utf8 | speaker id (`LJ`, `slt`, `p225`, …) |
//! | `audio` | utf8 | audio location: local path or object-store URL |
//! | `transcript` | utf8 | transcript as the corpus writes it |
//! | `normalized` | utf8 | `dv_text::normalize` output: lower-case words, `,` short and `.` long pauses |
//! | `sample_rate` | uint32 | Hz |
//! | `channels` | uint32 | channels in the file (the pipeline downmixes) |
//! | `samples` | uint64 | samples per channel |
//! | `duration` | float64 | seconds |
//! | `ref_phones` | list\<utf8\> | reference phones (`dv_text::Phoneme` symbols), null if none |
//! | `ref_phone_starts` | list\<float64\> | their start times, seconds |
//! | `ref_phone_ends` | list\<float64\> | their end times, seconds |
//! | `ref_f0_start` | float64 | time of the first reference F0 frame (its centre), null if none |
//! | `ref_f0_step` | float64 | seconds between F0 frames |
//! | `ref_f0_hz` | list\<float32\> | reference F0 per frame, 0 where unvoiced |
//!
//! The bad-item report ([`bad_items_frame`]) has `item`, `file`, `reason`
//! (a [`dv_corpus::BadReason`] name) and `detail`, all utf8.
//!
//! Parquet files are written through a temporary file and a rename: a crash
//! leaves the previous file or the new one, never a torn one.
#![forbid(unsafe_code)]

mod error;
mod frame;
mod summary;

pub use error::ManifestError;
pub use frame::{bad_items_frame, read_parquet, schema, utterances_frame, utterances_from_frame, write_parquet};
pub use summary::{DurationBin, OovReport, Summary};
