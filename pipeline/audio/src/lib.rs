//! Audio files and signal processing shared by the data pipeline and
//! inference. Light on purpose: no polars, no libtorch.
//!
//! For now this crate reads what a corpus reader must know about an audio
//! file without decoding it ([`probe`]): container, sample format, sample
//! rate, channels and length in frames (samples per channel). Decoding,
//! resampling, mu-law, MFCC and pitch arrive with the featurization work.
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

mod error;
mod probe;
mod wav;

pub use error::AudioError;
pub use probe::{probe, AudioInfo, Container, SampleFormat};
