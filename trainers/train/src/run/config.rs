//! The run configuration, one TOML file (`dv train --config run.toml`): parsed
//! and validated by `dv-config` (every key: docs/run-config.md), which
//! needs no libtorch, so that it is fuzzed on its own (`fuzz/`'s `run_config`).

pub use dv_config::{CheckpointConfig, DataConfig, InitConfig, ModelConfig, RunConfig, TrackingConfig, TrainConfig};
