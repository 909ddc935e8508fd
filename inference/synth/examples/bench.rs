//! Real-time factor of WaveNet generation on this CPU, per Table 2 size.
//!
//! Times only the autoregressive generation (as Deep Voice Table 2 does):
//! sampler construction and conditioning are outside the clock. For each
//! size, random weights (timing does not depend on their values except
//! through the relu sparsity of the output layers) and random conditioning;
//! direct sampling. Each configuration is run `--repeats` times; the table
//! shows the best and the median.
//!
//! ```text
//! cargo run --release -p dv-synth --example bench -- [--seconds 1.0] [--repeats 3]
//!     [--presets 20x32x128,40x64x256] [--md out.md] [--scalar]
//! ```

use std::time::Instant;

use dv_synth::random::{random_conditioning, random_voice};
use dv_synth::{Kernel, Nonlinearity, Precision, Rng, Sampler, SamplerOptions, Sampling};
use dv_voice::{WavenetConfig, PRESETS};

/// Deep Voice App. E eq. 36 with f_d = f_e = 10: FLOPs per sample.
fn flops_per_sample(c: &WavenetConfig, a: f64) -> f64 {
    let (l, r, s) = (c.layers as f64, c.residual_channels as f64, c.skip_channels as f64);
    let (fd, fe) = (10.0, 10.0);
    l * (10.0 * r * r + 11.0 * r + 2.0 * r * (fd + fe))
        + s * (2.0 * r * l + 2.0)
        + a * (2.0 * s + 2.0 * a + 3.0)
        + a * (3.0 + fd + fe)
}

struct Args {
    seconds: f64,
    repeats: usize,
    presets: Vec<String>,
    md: Option<String>,
    scalar: bool,
}

fn args() -> Args {
    let mut a = Args {
        seconds: 1.0,
        repeats: 3,
        presets: PRESETS.iter().map(|(n, _)| n.to_string()).collect(),
        md: None,
        scalar: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        match k.as_str() {
            "--seconds" => a.seconds = it.next().and_then(|v| v.parse().ok()).expect("--seconds N"),
            "--repeats" => a.repeats = it.next().and_then(|v| v.parse().ok()).expect("--repeats N"),
            "--presets" => a.presets = it.next().expect("--presets a,b").split(',').map(String::from).collect(),
            "--md" => a.md = it.next(),
            "--scalar" => a.scalar = true,
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn main() {
    let args = args();
    let kernel = Kernel::detect();
    let mut rows = Vec::new();
    println!("kernel {}; {} s of audio per run, {} repeats", kernel.name(), args.seconds, args.repeats);
    for name in &args.presets {
        let cfg = WavenetConfig::preset(name).unwrap_or_else(|| panic!("unknown preset {name}"));
        let voice = random_voice(cfg, 1).expect("random voice");
        let sr = voice.config().sample_rate as f64;
        let hop = voice.config().hop();
        let n = (args.seconds * sr) as usize / hop * hop;
        let cond = random_conditioning(voice.config(), n / hop, 2);
        let fps = flops_per_sample(&cfg, 256.0);
        let mut variants: Vec<(Kernel, SamplerOptions)> = Vec::new();
        if args.scalar {
            variants.push((Kernel::Scalar, SamplerOptions::default()));
        }
        if kernel == Kernel::Avx2Fma {
            for precision in [Precision::F32, Precision::Int16] {
                for nonlinearity in [Nonlinearity::Exact, Nonlinearity::Approximate] {
                    for threads in [1, 2] {
                        variants.push((kernel, SamplerOptions { precision, nonlinearity, threads }));
                    }
                }
            }
        }
        for (k, o) in variants {
            let sampler = Sampler::new(&voice, k, o).expect("sampler");
            let mut scratch = sampler.make_scratch();
            let mut out = vec![0u8; n];
            // Warm-up: caches, frequency, thread start.
            let warm = (n / 8).max(hop) / hop * hop;
            sampler
                .generate(&mut scratch, &cond, Sampling::Direct, &mut Rng::new(0), &mut out[..warm])
                .expect("generate");
            let mut rtfs = Vec::new();
            for rep in 0..args.repeats {
                sampler.reset(&mut scratch);
                let t0 = Instant::now();
                sampler
                    .generate(&mut scratch, &cond, Sampling::Direct, &mut Rng::new(rep as u64), &mut out)
                    .expect("generate");
                let dt = t0.elapsed().as_secs_f64();
                rtfs.push((n as f64 / sr) / dt);
            }
            rtfs.sort_by(|a, b| a.total_cmp(b));
            let best = rtfs[rtfs.len() - 1];
            let median = rtfs[rtfs.len() / 2];
            let us = 1e6 / (best * sr);
            let gflops = fps * best * sr / 1e9;
            let row = format!(
                "| {name} | {} | {} | {} | {} | {:.2} | {:.2} | {:.1} | {:.1} | {:.2} |",
                k.name(),
                match o.precision {
                    Precision::F32 => "fp32",
                    Precision::Int16 => "int16",
                },
                match o.nonlinearity {
                    Nonlinearity::Exact => "exact",
                    Nonlinearity::Approximate => "approx",
                },
                o.threads,
                best,
                median,
                us,
                gflops,
                sampler.weight_bytes() as f64 / 1e6,
            );
            println!("{row}");
            rows.push(row);
        }
    }
    let header = "| model ℓxrxs | kernel | weights | nonlinearities | threads | best × real time | median × real time | µs / sample (best) | GFLOP/s (eq. 36) | weight MB |\n| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |";
    let table = format!("{header}\n{}\n", rows.join("\n"));
    println!("\n{table}");
    if let Some(path) = args.md {
        std::fs::write(&path, &table).expect("write --md file");
    }
}
