//! Integration tests of dv-audio: header probing on well-formed and broken
//! files, decoding, resampling, mu-law, and MFCC parity with librosa.

mod chunk;
mod dsp;
mod fuzz;
mod mfcc;
mod pitch;
mod probe;
