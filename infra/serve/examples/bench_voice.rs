//! Writes a voice package of random weights at a Table 2 size with a
//! speech-like duration/F0 model (`dv_synth::random::random_text_voice`) and
//! no lexicon of its own (CMUDict): what `benchmarks/serve.md` loads when no
//! trained voice of that size is at hand. Random weights sample as fast as
//! trained ones; they just do not sound like speech.
//!
//! usage: bench_voice OUT_DIR [LAYERSxRESIDUALxSKIP] (default 20x64x128)

use std::path::PathBuf;

use dv_synth::random::{random_golden, random_text_voice};
use dv_voice::{DurationConfig, WavenetConfig, PRESETS};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(args.next().ok_or("usage: bench_voice OUT_DIR [20x64x128]")?);
    let size = args.next().unwrap_or_else(|| "20x64x128".into());
    let wavenet: WavenetConfig = PRESETS
        .iter()
        .find(|(name, _)| *name == size)
        .map(|(_, c)| *c)
        .ok_or_else(|| format!("{size}: one of {:?}", PRESETS.map(|(n, _)| n)))?;
    // The sizes of the paper's duration/F0 model are immaterial here: it
    // runs once per sentence, the WaveNet once per sample.
    let duration = DurationConfig { fc: 64, gru: 32, gru_layers: 1, f0_points: 4, ..DurationConfig::paper(true) };
    let voice = random_text_voice(wavenet, duration, None, 1)?;
    let golden = random_golden(&voice, 4, 2)?;
    voice.with_golden(golden)?.save(&out)?;
    println!("wrote {} ({size})", out.display());
    Ok(())
}
