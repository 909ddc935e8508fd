//! The CPU model of the tile kernel's activation rounding (`dv_gpu::emulate`):
//! unrounded, it is dv-synth's scalar reference; each rounding it models
//! changes the distributions, by amounts ordered as the precisions.

use dv_gpu::emulate::{drift, forward, Activations, Rounding, State};
use dv_gpu::parity::{bf16_rounded, reference};
use dv_gpu::Weights;
use dv_synth::random::{random_conditioning, random_voice};
use dv_voice::WavenetConfig;

#[test]
fn unrounded_it_is_the_scalar_reference() {
    let voice = bf16_rounded(&random_voice(WavenetConfig::preset("20x32x128").unwrap(), 3).unwrap()).unwrap();
    let n: usize = 96;
    let cond = random_conditioning(voice.config(), n.div_ceil(voice.config().hop()), 4);
    let (samples, probs) = reference(&voice, &cond, n).unwrap();
    let w = Weights::from_voice(&voice).unwrap();
    let mut st = State::new(&w);
    let (mut y1, mut y2) = (128usize, 128usize);
    let mut worst = 0f64;
    for t in 0..n {
        let p = forward(&w, &mut st, &Rounding::none(), y1, y2, cond.frame(t / w.sizes.hop));
        for (a, b) in p.iter().zip(&probs[t * 256..(t + 1) * 256]) {
            worst = worst.max((*a as f64 - *b as f64).abs());
        }
        (y2, y1) = (y1, samples[t] as usize);
    }
    assert!(worst < 2e-6, "max |Δp| {worst} against the scalar reference");
}

#[test]
fn each_rounding_moves_the_distributions_as_its_precision() {
    let voice = random_voice(WavenetConfig::preset("20x32x128").unwrap(), 7).unwrap();
    let n: usize = 128;
    let cond = random_conditioning(voice.config(), n.div_ceil(voice.config().hop()), 5);
    assert_eq!(drift(&voice, &cond, n, &Rounding::none()).unwrap(), 0.0);
    let two = drift(&voice, &cond, n, &Rounding::kernel(Activations::Bf16TwoTerms)).unwrap();
    let half = drift(&voice, &cond, n, &Rounding::kernel(Activations::F16)).unwrap();
    // Two bfloat16 terms keep ~16 significant bits, half precision 11.
    assert!(two > 0.0 && two < 1e-4, "two-term drift {two}");
    assert!(half > 10.0 * two, "half {half} against two terms {two}");
    let none = Rounding { kind: Activations::F16, ..Rounding::none() };
    for (what, r) in [
        ("dilated input", Rounding { dilated_input: true, ..none }),
        ("gate output", Rounding { gate_output: true, ..none }),
        ("relu(skip)", Rounding { skip_relu: true, ..none }),
        ("relu output", Rounding { relu_output: true, ..none }),
    ] {
        let d = drift(&voice, &cond, n, &r).unwrap();
        assert!(d > 0.0 && d < 10.0 * half, "{what}: {d} (all four {half})");
    }
}
