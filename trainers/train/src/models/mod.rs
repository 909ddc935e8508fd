//! The networks a run trains. Each is a [`Model`] that turns a [`Batch`]
//! into the sum of its examples' losses; the G2P, duration and WaveNet models
//! name and shape their parameters as the voice package does
//! (`inference/voice/FORMAT.md`).
//!
//! - [`segmentation`]: the §3.2 phoneme-pair CTC network the aligner uses;
//! - [`g2p`]: the §3.1 grapheme-to-phoneme encoder-decoder with beam search;
//! - [`duration`]: the §3.3 joint duration and F0 model (eq. 27 loss);
//! - [`wavenet`]: the App. A WaveNet, its gated layer stack written by hand,
//!   with [`qrnn`] (its bidirectional-QRNN conditioning) and [`gate`] (the
//!   fused CUDA gate or its libtorch reference);
//! - [`model`]: the [`Model`] trait, [`Batch`] and the hashed dropout masks.

pub mod duration;
pub mod g2p;
pub(crate) mod gate;
pub(crate) mod model;
pub mod qrnn;
pub(crate) mod segmentation;
pub(crate) mod wavenet;

pub use duration::{DurationConfig, DurationModel};
pub use g2p::{G2p, G2pConfig};
pub use model::{dropout, dropout_keeps, with_rng, Batch, Model};
pub use segmentation::{Segmentation, SegmentationConfig};
pub use wavenet::{Wavenet, WavenetConfig, SILENCE_CODE};
