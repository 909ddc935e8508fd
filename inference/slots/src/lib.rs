//! `dv-slots`: continuous batching for serving. Requests share one
//! multi-stream WaveNet sampler: a scheduler thread per voice owns a
//! [`MultiBackend`] of N slots; a request's sentences are attached to a free
//! slot as they arrive and the slot is freed when its request ends, leaves
//! or is cancelled; each launch advances every busy slot by one block of
//! samples, and each slot's block goes back to its request's channel (about
//! 100 ms of audio per launch with the default block). `dv-serve` puts HTTP
//! in front of it (`--device cuda`, `--device cpu-slots`); nothing here
//! knows HTTP.
//!
//! # Units
//!
//! Lengths are samples at the voice's rate (a sentence is its conditioning
//! frames × the voice's hop); a launch advances each busy slot by at most
//! the scheduler's `block` samples; audio leaves as 16-bit PCM, each mu-law
//! code mapped by [`dv_speak::pcm`] as every render maps it.
//!
//! # Contract
//!
//! * A slot restarts from silence with zero histories for each sentence,
//!   with the seed [`dv_speak::sentence_seed`]`(seed, index)`: a sentence's
//!   audio depends on its conditioning, length, lead and seed only, never on
//!   the other slots or on when it joined. The CPU backend reproduces
//!   [`dv_speak::Speaker::render`] on the CPU sample for sample.
//! * A sentence's first `lead` samples (its leading pause, all but
//!   [`dv_speak::LEAD_SAMPLED_S`]) are fed to the sampler as silence and
//!   sent as silence, as `Speaker::render` does, by every backend
//!   ([`MultiBackend::feeds_lead`]): the CPU's by forcing them, the CUDA
//!   kernel per slot (`dv_gpu::StreamStart::lead`).
//! * One request holds one slot from its first sentence to its last, so a
//!   server admitting at most N requests to render (the worker permits)
//!   never waits for a slot; requests beyond wait in the bounded queue.
//!
//! [`Scheduler`] is generic over the backend: [`CudaSlots`] is `dv-gpu`'s
//! kernel 2 ([`dv_gpu::Pipelined`] with conditioning windows), whose voice's
//! conditioning network also runs on the GPU ([`GpuConditioning`]: sentences
//! batched, their rows in [`FrameSpan`]s of a device [`FrameArena`]), and
//! [`CpuSlots`] drives `dv-synth`'s sampler slot by slot on the scheduler's
//! thread (CI tests the scheduler with it; `--device cpu-slots` serves with
//! it; CI drives the conditioning thread with the CPU reference through
//! [`ConditionBatches`]).
//!
//! [`SlotEngine`] is what a server holds per voice: the scheduler, the
//! conditioning network its requests run on the CPU, and the making of a
//! [`SlotSentence`] from a planned [`dv_speak::Sentence`] by
//! `Speaker::render`'s own rules ([`dv_speak::sentence_seed`],
//! [`dv_speak::lead_samples`]), so that the two paths cannot drift apart.
//!
//! # Why a crate of its own
//!
//! The engine sits on `dv-speak` (its sentences, seeds, lead and
//! cancellation) and on `dv-gpu` and `dv-synth` (the backends), and on
//! nothing of the server: a benchmark or another front end can drive it
//! without linking axum, hyper or the audio encoders (LAME, libopus), and
//! `dv-speak`, the one-request pipeline that `dv synth` links, stays free
//! of the scheduler and of tokio.
#![forbid(unsafe_code)]

mod arena;
mod backend;
mod condition;
mod cpu;
mod cuda;
mod engine;
mod scheduler;

pub use arena::{FrameArena, FrameSpan};
pub use backend::{
    CondError, CondStats, Condition, Conditioned, DeviceRows, LaunchTimes, MultiBackend, Prepare, SlotCond, SlotError,
    SlotSentence,
};
pub use condition::{ConditionBatches, GpuConditioning};
pub use cpu::CpuSlots;
pub use cuda::{fill_windows, CudaSlots};
pub use engine::SlotEngine;
pub use scheduler::{Scheduler, SlotEvent, SlotStats, SlotStream};
