//! The TOML files a user writes, parsed and checked with nothing but serde
//! and `toml`: no libtorch, no Parquet, no filesystem (but
//! [`RunConfig::load`]), so that the parsing of these untrusted inputs is
//! fuzzed on its own (`fuzz/`: the `run_config` and `recipe_file` targets;
//! benchmarks/reliability.md).
//!
//! * [`RunConfig`]: one training run, `dv train --config run.toml` (every
//!   key, with its type, default and the doc comment of its field here:
//!   `docs/run-config.md`, which `docs/run_config.py` writes from these
//!   files and `infra/run test` checks). `dv-train` re-exports every
//!   type here, so `dv_train::RunConfig` is this one; the sizes of each
//!   model ([`SegmentationConfig`], [`G2pConfig`], [`DurationConfig`],
//!   [`WavenetConfig`]), its data ([`DataConfig`]) and Adam's constants
//!   ([`AdamConfig`], [`StepAnnealing`]) live beside it.
//! * One contract from trainer to server: the G2P, duration/F0 and WaveNet
//!   models' architecture is the voice package's (`dv_voice`'s config types,
//!   with the Table 2 presets), which the libtorch-free inference side reads.
//!   Their configs here hold those types, as the sections `dv export`
//!   writes, and add only what training chooses (dropout, loss weights,
//!   precision, the fused step). A run config still writes each
//!   `[model.sizes]` as the flat table it always has; a private serde shape
//!   per model maps it (`wavenet.rs` says why), and refuses an unknown key by
//!   name.
//! * [`recipe::Recipe`]: `dv recipe run RECIPE.toml`; `dv` resolves its paths
//!   and reads the run configs it names.
#![forbid(unsafe_code)]

mod data;
mod duration;
mod g2p;
mod optim;
pub mod recipe;
mod run;
mod segmentation;
mod wavenet;

pub use data::{
    ChunksConfig, FeaturesConfig, LexiconConfig, ProsodyConfig, SyntheticConfig, FEATURE_MFCC, FRAME_SECONDS,
    PAIR_CLASSES,
};
pub use duration::DurationConfig;
pub use g2p::G2pConfig;
pub use optim::{AdamConfig, StepAnnealing};
pub use run::{
    CheckpointConfig, DataConfig, InitConfig, ModelConfig, RunConfig, TrackingConfig, TrainConfig,
    MAX_COLLECTIVE_TIMEOUT_S,
};
pub use segmentation::SegmentationConfig;
pub use wavenet::WavenetConfig;

/// A configuration that does not parse or does not hold together; `path`
/// names the file (or the section) and `reason` says what to change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("config {path}: {reason}")]
pub struct ConfigError {
    pub path: String,
    pub reason: String,
}
