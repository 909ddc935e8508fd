//! Running a training job: the loop every model shares, for one rank, and
//! what it stands on (the config, Adam, checkpoints, the collectives between
//! ranks and how ranks find each other, stopping, tracking), and the launcher
//! that runs ranks as threads with the in-process collective.
//!
//! Per step: the rank's slice of the global batch → sum of example losses ÷
//! global batch → backward → gradients summed over ranks, in one flat
//! buffer with the loss sum riding along ([`FlatParams`])
//! or in buckets (equal to the gradient of the global batch's mean loss,
//! whatever the rank count) → optional clipping → Adam at the annealed
//! learning rate. Rank 0 logs, validates, tracks and checkpoints; at start it
//! loads the newest checkpoint that verifies and broadcasts parameters,
//! Adam's moments and the step to the others.
//!
//! - [`data`]: the datasets a run config names, refused below one batch;
//! - [`rank`]: one rank's run, its step loop and the model it trains;
//! - [`gradient`] and [`bucket`]: zeroing and summing gradients over ranks;
//! - [`checkpointing`]: restore at start, `[init] from`, saves and rotation;
//! - [`validation`]: the held-out loss, shared among ranks;
//! - [`lead`]: rank 0's store, tracker and log;
//! - [`profile`]: per-phase step timing (`[train] profile`);
//! - [`threads`]: ranks as threads of one process;
//! - [`process`]: a rank as a process of its own, on the CPU over [`tcp`].
//!
//! What the loop stands on:
//!
//! - [`config`]: the run's TOML file, parsed by `dv-config`;
//! - [`optim`]: Adam as PyTorch's, step annealing, gradient clipping and the
//!   flat parameter and gradient buffers;
//! - [`checkpoint`]: the checkpoint format, written with one put;
//! - [`collective`]: the interface between ranks and its in-process
//!   implementation; [`tcp`]: the one between CPU processes (hosts);
//!   [`rendezvous`]: how ranks in separate processes meet;
//! - [`stop`]: a stop request (SIGTERM) honoured at a step boundary;
//! - [`tracking`]: metrics to a JSONL file and to [`mlflow`].

mod bucket;
pub mod checkpoint;
mod checkpointing;
pub(crate) mod collective;
pub(crate) mod config;
mod data;
mod gradient;
mod lead;
pub(crate) mod mlflow;
pub(crate) mod optim;
mod process;
mod profile;
mod rank;
pub(crate) mod rendezvous;
pub(crate) mod stop;
mod tcp;
mod threads;
pub(crate) mod tracking;
mod validation;

pub use bucket::BUCKET_FLOATS;
pub use checkpoint::{CheckpointData, CheckpointState};
pub use collective::{Collective, CollectiveError, LocalCollective};
pub use config::{CheckpointConfig, DataConfig, InitConfig, ModelConfig, RunConfig, TrackingConfig, TrainConfig};
pub use lead::{Lead, Log};
pub use mlflow::MlflowRun;
pub use optim::{clip_grad_norm, Adam, AdamConfig, FlatParams, StepAnnealing};
pub use process::train_process;
pub use rank::{device_of, train_rank, RunSummary};
pub use rendezvous::{first_host, share_id, RankEnv, SLURM_PORT_BASE, SLURM_PORT_SPAN};
pub use stop::stop_flag;
pub use tcp::{TcpCollective, HUB_MARGIN};
pub use threads::train_threads;
pub use tracking::{curves, loss_chart, Tracker};
