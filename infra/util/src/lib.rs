//! The small pieces of code that both sides of the workspace share, kept in
//! one crate with no dependency but `thiserror` so that the lightest crates
//! (`dv-voice`, `dv-corpus`) can use them without inheriting anything.
//!
//! - [`write_atomic`]: a file written so that a reader, or a process killed
//!   mid-write, sees the old content or the new, never half of either.
//! - [`SplitMix64`] and [`splitmix64`]: the seeded generator behind every
//!   reproducible choice outside the sampler (data order, validation splits,
//!   corpus shuffles, weight initialisation seeds), and the seeding of the
//!   sampler's xoshiro256++ (`dv-synth`).
//!
//! # Why a crate of its own
//!
//! Each of these existed two to four times, with small differences (one
//! synced the file, two did not; three temporary-file names). The crates
//! that need them have no common dependency: `dv-voice` depends on none of
//! ours, and `dv-corpus` must not depend on the voice package. A crate this
//! small costs one more node in the graph and nothing in build time.
#![forbid(unsafe_code)]

mod fs;
mod rng;

pub use fs::{temp_path, write_atomic, WriteError};
pub use rng::{splitmix64, SplitMix64};
