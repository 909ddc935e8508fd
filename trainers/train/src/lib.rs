//! One training loop for every Deep Voice model (§4: the segmentation,
//! grapheme-to-phoneme, duration/F0 and WaveNet models all train with Adam,
//! β1 = 0.9, β2 = 0.999, ε = 1e-8, and a step-annealed learning rate).
//!
//! # Contract
//!
//! * A run is one TOML file ([`RunConfig`]); `dv train --config run.toml`.
//! * Data parallelism: the global batch is split equally among ranks; each
//!   rank's loss is the *sum* over its examples divided by the global batch,
//!   and gradients are summed over ranks, so the update equals the
//!   single-rank update on the whole batch up to float summation order.
//!   When every parameter is float32 on one device they live, with their
//!   gradients, in two flat buffers ([`FlatParams`]): one all-reduce of the
//!   gradient buffer (which also carries the step's loss sum) per step, and
//!   zeroing, clipping and Adam are a few kernels over the buffers;
//!   otherwise gradients are summed in flat buckets of at most 4 MiB
//!   ([`BUCKET_FLOATS`]). `DV_TRAIN_FLAT=0` forces the bucketed path (a developer
//!   switch, with the others in `docs/environment.md`). Rank 0's parameters are
//!   broadcast at start. Collectives sit behind [`Collective`]:
//!   [`LocalCollective`] runs ranks as threads of one process (CPU; what CI
//!   tests); an NCCL implementation serves GPUs.
//! * Determinism: model init, the data order ([`Sampler`]) and dropout masks
//!   are functions of the seed and the step (masks also of each example's
//!   id, so they do not depend on which rank reads it). On CPU with a fixed
//!   thread count a run is bitwise reproducible, and a run killed at any
//!   moment and resumed from its last checkpoint continues with exactly the
//!   losses of an uninterrupted run.
//! * Checkpoints ([`checkpoint`]): parameters, Adam's moments and step, the
//!   step reached, best validation loss, config, code version and seed, in
//!   one safetensors object with a CRC-32, written with one put to any
//!   `dv-store` location; the last `keep_last` are kept plus `best`. A
//!   checkpoint that does not verify is reported and the previous one used.
//! * Data: `[data] kind = "synthetic"` ([`Synthetic`], generated from a
//!   seed) or `kind = "features"` ([`Features`]: a local `dv featurize`
//!   output with reference phones, as §3.2 phoneme-pair labels, 1601
//!   classes with the blank; utterances it cannot use are skipped and
//!   counted, never fatal, and the counts are logged at start), or
//!   `kind = "chunks"` ([`Chunks`]: the same output's §4.4 chunks with
//!   their 227-dim conditioning frames, for the WaveNet), `kind =
//!   "prosody"` ([`Prosody`]: phone durations, voicing and F0, for the
//!   duration model) or `kind = "lexicon"` ([`Pronunciations`]: CMUDict
//!   filtered as §4.2, split by a hash of the word, for the G2P model).
//! * Models: the §3.2 segmentation network ([`Segmentation`]), the App. A
//!   WaveNet with its bidirectional-QRNN conditioning ([`Wavenet`], [`qrnn`]),
//!   the §3.3 duration + F0 model with the eq. 27 loss ([`DurationModel`])
//!   and the §3.1 grapheme-to-phoneme encoder-decoder with beam search
//!   ([`G2p`]). The last three use the voice package's parameter names and
//!   shapes (`inference/voice/FORMAT.md`), so `dv export` copies them and
//!   `dv-synth` runs them without libtorch.
//! * Tracking ([`Tracker`]): a JSONL file, and an MLflow server when given.
//!
//! Not yet: overlapping the all-reduce with the backward pass (tch exposes
//! no gradient hooks; gradients are reduced after backward), autocast (the
//! WaveNet casts its forward to bf16 itself: `bf16 = true`).
#![forbid(unsafe_code)]

pub mod checkpoint;
mod chunks;
mod collective;
mod config;
pub mod conformance;
mod data;
pub mod duration;
mod error;
mod features;
pub mod g2p;
mod gate;
mod mlflow;
mod model;
mod optim;
mod prefetch;
pub mod pronunciation;
pub mod prosody;
pub mod qrnn;
mod rendezvous;
mod run;
mod sampler;
mod segmentation;
mod skipped;
mod stop;
mod tracking;
mod wavenet;

pub use checkpoint::{CheckpointData, CheckpointState};
pub use chunks::{stressed_phone, ChunkSplit, ChunkUtterance, Chunks, ChunksConfig};
pub use collective::{Collective, CollectiveError, LocalCollective};
pub use config::{CheckpointConfig, DataConfig, InitConfig, ModelConfig, RunConfig, TrackingConfig, TrainConfig};
pub use data::{Dataset, Synthetic, SyntheticConfig};
pub use duration::{DurationConfig, DurationModel};
pub use error::TrainError;
pub use features::{
    ctc_min_frames, is_validation, pair_labels, reference_boundaries, FeatureSplit, Features, FeaturesConfig,
    FEATURE_MFCC, FRAME_SECONDS, PAIR_CLASSES,
};
pub use g2p::{G2p, G2pConfig};
pub use mlflow::MlflowRun;
pub use model::{dropout, dropout_keeps, with_rng, Batch, Model};
pub use optim::{clip_grad_norm, Adam, AdamConfig, FlatParams, StepAnnealing};
pub use pronunciation::{G2pMetrics, LexiconConfig, Pronunciations};
pub use prosody::{Prosody, ProsodyConfig, ProsodyExample, ProsodyMetrics};
pub use rendezvous::{first_host, share_id, RankEnv, SLURM_PORT_BASE, SLURM_PORT_SPAN};
pub use run::{device_of, train_rank, train_threads, Lead, Log, RunSummary, BUCKET_FLOATS};
pub use sampler::{splitmix64, Buckets, Sampler};
pub use segmentation::{Segmentation, SegmentationConfig};
pub use skipped::Skipped;
pub use stop::stop_flag;
pub use tracking::{curves, loss_chart, Tracker};
pub use wavenet::{Wavenet, WavenetConfig, SILENCE_CODE};
