//! Audio files and signal processing shared by the data pipeline and
//! inference. Light on purpose: no polars, no libtorch.
//!
//! * [`probe`]: what a corpus reader must know about an audio file without
//!   decoding it: container, sample format, sample rate, channels and length
//!   in frames (samples per channel).
//! * [`decode()`]: mono f32 samples in `[-1, 1]` (channels averaged).
//! * [`resample`]: any rate to any rate (rubato's FFT resampler); the model
//!   rate is 16384 Hz (Deep Voice App. A.3).
//! * [`mulaw`]: 8-bit mu-law companding, mu = 255.
//! * [`Mfcc`]: 20 MFCCs at a 10 ms stride (§3.2), librosa-compatible.
//! * [`Pitch`]: F0 by Praat's autocorrelation method (App. A.3 settings).
//! * [`chunks`]: 1 s training chunks with 0.25 s of context (§4.4).
//!
//! # Invariants
//!
//! * WAV headers are parsed here, exactly: PCM of 8, 16, 24 or 32 bits and
//!   IEEE float of 32 or 64 bits are supported (also inside
//!   `WAVE_FORMAT_EXTENSIBLE`); A-law, mu-law, ADPCM and other codecs are
//!   [`AudioError::Unsupported`]. A data chunk that declares more bytes than
//!   the file holds is [`AudioError::Truncated`]; no frames is
//!   [`AudioError::Empty`].
//! * FLAC and MP3 are probed with Symphonia; their length comes from the
//!   stream header (FLAC `STREAMINFO`), so a truncated FLAC is only caught
//!   when it is decoded.
//! * Nothing panics on a corrupt file: every failure is an [`AudioError`]
//!   naming the file and the reason.
#![forbid(unsafe_code)]

mod chunk;
mod decode;
mod error;
mod mfcc;
pub mod mulaw;
mod pitch;
mod probe;
mod resample;
mod wav;

pub use chunk::{chunks, Chunk, ChunkConfig, Chunks};
pub use decode::{decode, Decoded};
pub use error::AudioError;
pub use mfcc::{Mfcc, MfccConfig, MfccScratch};
pub use pitch::{Pitch, PitchConfig, PitchTrack};
pub use probe::{probe, AudioInfo, Container, SampleFormat};
pub use resample::resample;
