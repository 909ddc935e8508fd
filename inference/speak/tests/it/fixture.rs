//! The test voice of the integration tests of dv-speak, dv-slots and
//! dv-serve: a WaveNet small enough to sample seconds of audio in a blink,
//! a small duration/F0 model, the text the tests speak and a lexicon for
//! it. dv-slots and dv-serve include this file with `#[path]` (a test
//! fixture is no reason for a crate), so each crate's tests still build and
//! run alone (`cargo test -p dv-serve`).

use std::path::Path;

use dv_synth::random::random_golden;
use dv_voice::{DurationConfig, Voice, WavenetConfig};

/// A WaveNet small enough to sample seconds of audio in a blink.
pub const FAST: WavenetConfig = WavenetConfig { layers: 2, residual_channels: 8, skip_channels: 8, dilation_cycle: 2 };

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

/// A small duration/F0 model over the paper's 40 phonemes and 5 stress
/// levels, with the paper's units (10 ms, 100 Hz).
pub fn duration_config() -> DurationConfig {
    DurationConfig { fc: 16, gru: 8, gru_layers: 1, f0_points: 4, ..DurationConfig::paper(true) }
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
