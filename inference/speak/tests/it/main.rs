//! Integration tests of dv-speak on random voice packages built here (no
//! libtorch): `dv_synth::random` weights, with the duration model's output
//! biased to speech-like durations (60–110 ms) and F0 (about 200 Hz), and
//! golden outputs computed by `dv_synth::random::random_golden`, saved as a
//! package directory with a small `lexicon.dict` (`fixture.rs`, which
//! dv-slots' and dv-serve's tests include too).

mod calibrate;
mod corrupt;
mod fixture;
mod package;
mod parity_cache;
mod plan;
mod render;
mod shipped;
mod text;

use std::path::Path;

use dv_speak::{Speaker, SpeakerOptions};
use dv_synth::random::random_text_voice;
use dv_voice::{G2pConfig, Voice};

pub use fixture::{duration_config, save_package, FAST, LEXICON, TEXT};

/// A random voice with a duration model (and a G2P model when given) whose
/// durations are 60–110 ms and F0 about 200 Hz.
pub fn text_voice(g2p: Option<G2pConfig>, seed: u64) -> Voice {
    random_text_voice(FAST, duration_config(), g2p, seed).unwrap()
}

/// A package with a duration model and [`LEXICON`], loaded on the CPU.
pub fn speaker(dir: &Path) -> Speaker {
    save_package(&text_voice(None, 5), dir, true);
    Speaker::load(dir, &SpeakerOptions::default()).unwrap()
}
