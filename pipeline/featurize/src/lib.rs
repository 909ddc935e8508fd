//! `dv featurize`: a corpus in, sharded Parquet features out, on a local
//! disk or any object store (`file://`, `s3://`, `gs://`, `az://`).
//!
//! # Output layout under `--out`
//!
//! | object | what |
//! | --- | --- |
//! | `shards/shard-IIIII-of-NNNNN.parquet` | features, one row per utterance (schema below); written last, so its presence means the shard is complete |
//! | `chunks/shard-IIIII-of-NNNNN.parquet` | the §4.4 chunk index of the shard's utterances |
//! | `bad/shard-IIIII-of-NNNNN.parquet` | utterances skipped, with file and reason (`dv-manifest`'s bad-item schema) |
//! | `reports/shard-IIIII-of-NNNNN.json` | the shard's counts: utterances, skipped, audio seconds, chunks |
//! | `manifest.json` | written once every shard exists: the shard list and the totals |
//!
//! [`format`] owns this layout and the schemas below: the names, the
//! listing and reading of a local output's shards, and the rewrite of
//! their reference phones.
//!
//! # Features
//!
//! `job` (default): the featurization job and the Parquet readers of
//! [`format`], with polars, the object stores and tokio. Without it the
//! crate is the layout alone (names, columns, listing), for a crate that
//! reads the shards itself and must not inherit the job's dependencies.
//!
//! Every object is written with one `put` (a single request on object
//! stores; a temporary file and a rename on local disks), so a job killed at
//! any moment leaves no partial object visible. A rerun skips every shard
//! whose features object exists: the job resumes at shard granularity.
//!
//! A corpus given as an object-store URL is mirrored into a local staging
//! directory first ([`stage_corpus`]): already-staged files of the right size
//! and entity tag are not fetched again.
//!
//! Utterances are sorted by id and dealt to shards round-robin (utterance
//! `k` of the sorted list goes to shard `k mod N`), so N independent workers
//! started with `--shard i/N` write disjoint outputs.
//!
//! # Feature schema (`shards/*.parquet`)
//!
//! | column | Arrow type | meaning |
//! | --- | --- | --- |
//! | `id`, `speaker` | utf8 | from the manifest |
//! | `sample_rate` | uint32 | the model rate (16384 Hz by default) |
//! | `samples` | uint64 | audio samples at that rate |
//! | `duration` | float64 | seconds |
//! | `mulaw` | binary | 8-bit mu-law audio (mu = 255), one byte per sample |
//! | `mfcc` | list\<float32\> | 20 MFCCs per 10 ms frame, frame-major `[frames, 20]` |
//! | `mfcc_frames` | uint32 | frames |
//! | `f0_hz` | list\<float32\> | Praat-equivalent F0 per 1/256 s frame, 0 = unvoiced |
//! | `f0_start` | float64 | time of the first F0 frame's centre, seconds |
//! | `ref_phones`, `ref_phone_starts`, `ref_phone_ends` | list | reference phone labels passed through from the manifest, null if none |
//!
//! Chunk index (`chunks/*.parquet`): `id` utf8, `chunk` uint32 (index in the
//! utterance), `window_start` int64 (samples, negative inside the leading
//! silence), `window_samples`, `context_samples`, `target_samples` uint32.
#![forbid(unsafe_code)]

mod error;
#[cfg(feature = "job")]
mod features;
pub mod format;
#[cfg(feature = "job")]
mod job;
#[cfg(feature = "job")]
mod shard;
#[cfg(feature = "job")]
mod stage;

pub use error::FeaturizeError;
#[cfg(feature = "job")]
pub use {
    dv_store::{ObjectInfo, Store, StoreError},
    features::{featurize_utterance, UtteranceFeatures, MAX_UTTERANCE_SECONDS},
    job::{run, Job, Report, ShardSpec},
    stage::{corpus_listing, is_remote, runtime, stage_corpus, Staged},
};
