//! Writes a random voice package that speaks text (no training needed):
//! `dv_synth::random::random_text_voice` weights with golden outputs, for
//! trying `dv synth` or a server end to end. It babbles.
//!
//! ```sh
//! cargo run -p dv-speak --example random_voice -- OUT_DIR [--g2p] [--seed N]
//! ```

use std::path::PathBuf;

use dv_synth::random::{random_golden, random_text_voice};
use dv_voice::{DurationConfig, G2pConfig, WavenetConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut out, mut g2p, mut seed) = (None, false, 1u64);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--g2p" => g2p = true,
            "--seed" => seed = args.next().ok_or("--seed needs a value")?.parse()?,
            _ => out = Some(PathBuf::from(a)),
        }
    }
    let out = out.ok_or("usage: random_voice OUT_DIR [--g2p] [--seed N]")?;
    let wavenet = WavenetConfig { layers: 4, residual_channels: 8, skip_channels: 16, dilation_cycle: 2 };
    let duration = DurationConfig {
        input_dim: 45,
        fc: 32,
        gru: 16,
        gru_layers: 1,
        f0_points: 4,
        duration_unit_s: 0.01,
        f0_unit_hz: 100.0,
        stress: true,
        bidirectional: false,
    };
    let g2p = g2p.then(|| G2pConfig::new(8, 16, 1, 40, 5));
    let voice = random_text_voice(wavenet, duration, g2p, seed)?;
    let golden = random_golden(&voice, 4, seed + 1)?;
    voice.with_golden(golden)?.save(&out)?;
    println!("wrote {}", out.display());
    Ok(())
}
