//! What a run reads: each kind of `[data]` as a [`Dataset`] that builds any
//! batch from example indices alone, and the order the ranks read them in.
//!
//! - [`dataset`]: the [`Dataset`] trait and [`Synthetic`] data from a seed;
//! - [`features`]: MFCC frames and phoneme-pair labels for the segmentation
//!   model, from a `dv featurize` output; [`skipped`] counts what it and the
//!   chunks leave out;
//! - [`chunks`]: the WaveNet's §4.4 chunks with their conditioning frames;
//! - [`prosody`]: phone durations, voicing and F0 for the duration model,
//!   and its held-out metrics;
//! - [`pronunciation`]: CMUDict filtered as §4.2 for the G2P model, and its
//!   error rates;
//! - [`sampler`]: the deterministic order of the global batches and each
//!   rank's share; [`prefetch`]: a rank's batches built ahead on a thread.

pub(crate) mod chunks;
pub(crate) mod dataset;
pub(crate) mod features;
pub(crate) mod prefetch;
pub mod pronunciation;
pub mod prosody;
pub(crate) mod sampler;
pub(crate) mod skipped;

pub use chunks::{jitter_f0, stressed_phone, ChunkSplit, ChunkUtterance, Chunks, ChunksConfig};
pub use dataset::{Dataset, Synthetic, SyntheticConfig};
pub use features::{
    ctc_min_frames, is_validation, merged_phones, pair_labels, reference_boundaries, restressed, FeatureSplit, Features, FeaturesConfig,
    FEATURE_MFCC, FRAME_SECONDS, PAIR_CLASSES,
};
pub use pronunciation::{G2pMetrics, LexiconConfig, Pronunciations};
pub use prosody::{Prosody, ProsodyConfig, ProsodyExample, ProsodyMetrics};
pub use sampler::{splitmix64, Buckets, Sampler};
pub use skipped::Skipped;
