//! The training loop every model shares, for one rank, and the launcher
//! that runs ranks as threads with the in-process collective.
//!
//! Per step: the rank's slice of the global batch → sum of example losses ÷
//! global batch → backward → gradients summed over ranks, in one flat
//! buffer with the loss sum riding along ([`FlatParams`](crate::FlatParams))
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
//! - [`threads`]: ranks as threads of one process.

mod bucket;
mod checkpointing;
mod data;
mod gradient;
mod lead;
mod profile;
mod rank;
mod threads;
mod validation;

pub use bucket::BUCKET_FLOATS;
pub use lead::{Lead, Log};
pub use rank::{device_of, train_rank, RunSummary};
pub use threads::train_threads;
