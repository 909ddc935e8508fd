//! Speed of the conditioning network (`ConditioningNetwork::forward`) on a
//! random voice, against the f64 reference (`forward_reference`) in the same
//! run: milliseconds per audio second (256 frames/s), best of `--repeats`.
//!
//! ```text
//! cargo run --release -p dv-synth --example conditioning -- [--frames 1024] [--repeats 3]
//!     [--preset 40x64x256] [--hidden 128]
//! ```
//!
//! Random voices have H = 32; `--hidden` sets the QRNN width (128, a
//! trained voice's, by default).

use std::time::Instant;

use dv_synth::random::{random_config, random_weights};
use dv_synth::{ConditioningNetwork, Rng};
use dv_voice::{Voice, WavenetConfig};

fn main() {
    let (mut frames, mut repeats, mut preset, mut hidden) = (1024usize, 3usize, "40x64x256".to_string(), 128usize);
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        match k.as_str() {
            "--frames" => frames = it.next().and_then(|v| v.parse().ok()).expect("--frames N"),
            "--repeats" => repeats = it.next().and_then(|v| v.parse().ok()).expect("--repeats N"),
            "--preset" => preset = it.next().expect("--preset NAME"),
            "--hidden" => hidden = it.next().and_then(|v| v.parse().ok()).expect("--hidden H"),
            other => panic!("unknown argument {other}"),
        }
    }
    let cfg = WavenetConfig::preset(&preset).unwrap_or_else(|| panic!("unknown preset {preset}"));
    let mut config = random_config(cfg);
    config.conditioning.hidden = hidden;
    let weights = random_weights(&config, 1);
    let voice = Voice::new(config, weights).expect("random voice");
    let net = ConditioningNetwork::new(&voice).expect("conditioning network");
    let d = voice.config().conditioning.input_dim;
    let mut rng = Rng::new(7);
    let features: Vec<f32> = (0..frames * d).map(|_| rng.normal()).collect();
    let audio_s = frames as f64 / (voice.config().sample_rate as f64 / voice.config().hop() as f64);
    let best = |f: &dyn Fn() -> Vec<f32>| -> (f64, Vec<f32>) {
        let mut best = f64::INFINITY;
        let mut out = Vec::new();
        for _ in 0..repeats {
            let t = Instant::now();
            out = f();
            best = best.min(t.elapsed().as_secs_f64());
        }
        (best, out)
    };
    if std::env::var_os("DV_FAST_ONLY").is_some() {
        // For profiling the fast path alone.
        let (t, _) = best(&|| net.forward(&features).unwrap().data().to_vec());
        println!("forward: {:.1} ms per audio second", t * 1e3 / audio_s);
        return;
    }
    let (t_ref, y_ref) = best(&|| net.forward_reference(&features).unwrap().data().to_vec());
    let (t_fast, y_fast) = best(&|| net.forward(&features).unwrap().data().to_vec());
    let scale = y_ref.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let diff = y_ref.iter().zip(&y_fast).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
    println!("preset {preset}, H = {hidden}, {frames} frames = {audio_s:.2} s of audio, best of {repeats}");
    println!("reference (f64 scalar): {:8.1} ms = {:6.1} ms per audio second", t_ref * 1e3, t_ref * 1e3 / audio_s);
    println!("forward   (f32 fast)  : {:8.1} ms = {:6.1} ms per audio second", t_fast * 1e3, t_fast * 1e3 / audio_s);
    println!("speed-up {:.1}x; max |diff| {diff:.3e} (output max |y| {scale:.3})", t_ref / t_fast);
}
