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
//!   tests); [`TcpCollective`] runs CPU ranks as processes, on one host or
//!   many ([`train_process`], `dv train --procs`), with the same sums bit
//!   for bit; an NCCL implementation serves GPUs.
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
//!   ([`G2p`]). The last three are the voice package's models: their
//!   configs ([`G2pConfig`], [`DurationConfig`], [`WavenetConfig`]) hold the
//!   package's config sections (`dv_voice`'s types, usize sizes, converted
//!   to libtorch's i64 where a tensor is made) plus the training fields, and
//!   they use the package's parameter names and shapes
//!   (`inference/voice/FORMAT.md`), so [`export`] copies them and `dv-synth`
//!   runs them without libtorch.
//! * Export ([`export`]): a checkpoint → a voice package with golden outputs
//!   (the WaveNet, the duration/F0 model and the G2P model, added alone or
//!   together), or a checkpoint's model weights alone (averaged, in half
//!   precision). `dv export` is a thin wrapper over it.
//! * Alignment ([`alignment`]): a segmentation checkpoint's phoneme
//!   boundaries for a featurize output (TextGrids, a Parquet table and a
//!   report); `dv align` and the recipe's align stage call it.
//! * Tracking ([`Tracker`]): a JSONL file, and an MLflow server when given.
//!
//! # Layout
//!
//! Five parts, one job each:
//!
//! * `models`: the networks above, each behind the one [`Model`] trait (a
//!   [`Batch`] in, the sum of its examples' losses out);
//! * `data`: what they read, each `[data] kind` a [`Dataset`] that builds any
//!   batch from example indices, and the order the ranks read it in
//!   ([`Sampler`]);
//! * `run`: the loop that trains any model on any dataset over ranks
//!   ([`train_rank`], [`train_threads`]) and what it stands on: the config,
//!   Adam, checkpoints, the collectives and the rendezvous, stopping, tracking;
//! * [`export`]: what a run's checkpoints become, the voice package the
//!   inference side reads;
//! * [`alignment`]: what a segmentation checkpoint makes of a corpus, its
//!   phoneme boundaries, with its own error ([`alignment::AlignmentError`]).
//!
//! Dependencies point one way: `export` and `alignment` use `run`
//! (checkpoints), `data` and `models`, `run` uses `data` and `models`, `data`
//! uses `models` (a dataset builds the [`Batch`] a model reads), `models` uses
//! none; [`TrainError`] is shared by the first four, and `alignment`'s error
//! wraps it.
//!
//! Everything public of the first three is re-exported here; [`checkpoint`],
//! [`duration`], [`g2p`], [`qrnn`], [`prosody`] and [`pronunciation`] are
//! public modules as well, for their helpers and constants, [`export`] is
//! reached by its path (`dv_train::export::add_g2p`), and [`conformance`] is
//! the suite every [`Collective`] passes.
//!
//! Not yet: overlapping the all-reduce with the backward pass (tch exposes
//! no gradient hooks; gradients are reduced after backward), autocast (the
//! WaveNet casts its forward to bf16 itself: `bf16 = true`).
#![forbid(unsafe_code)]

pub mod alignment;
pub mod conformance;
mod data;
mod error;
pub mod export;
mod models;
mod run;

pub use data::{
    ctc_min_frames, is_validation, jitter_f0, merged_phones, pair_labels, pronunciation, prosody, reference_boundaries,
    restressed, splitmix64,
    stressed_phone, Buckets, ChunkSplit, ChunkUtterance, Chunks, ChunksConfig, Dataset, FeatureSplit, Features,
    FeaturesConfig, G2pMetrics, LexiconConfig, Pronunciations, Prosody, ProsodyConfig, ProsodyExample, ProsodyMetrics,
    Sampler, Skipped, Synthetic, SyntheticConfig, FEATURE_MFCC, FRAME_SECONDS, PAIR_CLASSES,
};
pub use error::TrainError;
pub use models::{
    dropout, dropout_keeps, duration, g2p, qrnn, with_rng, Batch, DurationConfig, DurationModel, G2p, G2pConfig, Model,
    Segmentation, SegmentationConfig, Wavenet, WavenetConfig, SILENCE_CODE,
};
pub use run::{
    checkpoint, clip_grad_norm, curves, device_of, first_host, loss_chart, share_id, stop_flag, train_rank,
    train_threads, Adam, AdamConfig, CheckpointConfig, CheckpointData, CheckpointState, Collective, CollectiveError,
    DataConfig, FlatParams, InitConfig, Lead, LocalCollective, Log, MlflowRun, ModelConfig, RankEnv, RunConfig,
    RunSummary, StepAnnealing, Tracker, TrackingConfig, TrainConfig, BUCKET_FLOATS, SLURM_PORT_BASE, SLURM_PORT_SPAN,
};
pub use run::{train_process, TcpCollective, HUB_MARGIN};
