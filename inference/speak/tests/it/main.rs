//! Integration tests of dv-speak on random voice packages built here (no
//! libtorch): `dv_synth::random` weights, with the duration model's output
//! biased to speech-like durations (60–110 ms) and F0 (about 200 Hz), and
//! golden outputs computed by `dv_synth::random::random_golden`, saved as a
//! package directory with a small `lexicon.dict`.

mod calibrate;
mod corrupt;
mod package;
mod parity_cache;
mod plan;
mod render;
mod shipped;
mod text;

use std::path::Path;

use dv_speak::{Speaker, SpeakerOptions};
use dv_synth::random::{random_golden, random_text_voice};
use dv_voice::{DurationConfig, G2pConfig, Voice, WavenetConfig};

/// A WaveNet small enough to sample seconds of audio in a test.
pub const WAVENET: WavenetConfig =
    WavenetConfig { layers: 2, residual_channels: 8, skip_channels: 8, dilation_cycle: 2 };

/// Every word of [`TEXT`] and a few more.
pub const LEXICON: &str = "\
hello HH AH0 L OW1
world W ER1 L D
good G UH1 D
speech S P IY1 CH
bye B AY1
now N AW1
";

/// Two sentences, a short pause in the first.
pub const TEXT: &str = "Hello world, good speech. Bye now!";

/// A small duration/F0 model over 40 phonemes and 5 stress levels.
pub fn duration_config() -> DurationConfig {
    DurationConfig {
        input_dim: 45,
        fc: 16,
        gru: 8,
        gru_layers: 1,
        f0_points: 4,
        duration_unit_s: 0.01,
        f0_unit_hz: 100.0,
        stress: true,
    }
}

/// A random voice with a duration model (and a G2P model when given) whose
/// durations are 60–110 ms and F0 about 200 Hz.
pub fn text_voice(g2p: Option<G2pConfig>, seed: u64) -> Voice {
    random_text_voice(WAVENET, duration_config(), g2p, seed).unwrap()
}

/// Saves `voice` with golden outputs into `dir`, with [`LEXICON`] as its
/// `lexicon.dict` when `lexicon`.
pub fn save_package(voice: &Voice, dir: &Path, lexicon: bool) {
    let golden = random_golden(voice, 4, 99).unwrap();
    voice.clone().with_golden(golden).unwrap().save(dir).unwrap();
    if lexicon {
        std::fs::write(dir.join(dv_speak::LEXICON_FILE), LEXICON).unwrap();
    }
}

/// A package with a duration model and [`LEXICON`], loaded on the CPU.
pub fn speaker(dir: &Path) -> Speaker {
    save_package(&text_voice(None, 5), dir, true);
    Speaker::load(dir, &SpeakerOptions::default()).unwrap()
}
