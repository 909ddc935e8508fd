//! `gpu_bench`: the GPU samplers of dv-gpu, checked and timed on the device
//! (issue 9). Every configuration is first compared with the CPU scalar
//! reference (per-step distributions teacher-forced, and mode-sampled
//! streams free-running) and only then timed with device events; a
//! configuration that fails parity is reported and not timed.
//!
//! * `gpu-single`: kernel 1 (one utterance per launch): real-time factor for
//!   every Table 2 size (random weights, seeded) and any `--voice`, for each
//!   cluster size and precision asked for.
//! * `gpu-streams`: kernel 2 (many streams): samples per second per stream
//!   and in all at each number of streams, and the largest number of streams
//!   that each stay faster than real time.
//! * `gpu-emulate`: no GPU needed: the tile kernel's activation rounding
//!   modelled on the CPU (`dv_gpu::emulate`), the |Δp| its parity check would
//!   find for each voice, with two-term bfloat16 and with half-precision
//!   activations, and for each of the four rounded inputs alone.
//!
//! Results are printed as a table and appended to `--json` as JSON lines.
//!
//! A developer harness, not a user command (it was `dv bench` until issue
//! 44; the subcommands, flags, tables and JSON lines are the same):
//!
//! ```text
//! cargo run -p dv-gpu --example gpu_bench -- gpu-single --presets 20x64x128
//! ```
//!
//! The GPU machine has no Rust toolchain: `benchmarks/gpu/carry.sh` builds
//! it here and carries it, stripped and xz-compressed, as
//! `.carry/gpu_bench.xz`, which `benchmarks/device_env.sh`'s `bench_env`
//! unpacks there (`benchmarks/gpu/*.sh`, `benchmarks/serve/*.sh`).

#![forbid(unsafe_code)]

mod emulate;
mod single;
mod streams;

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use dv_synth::random::random_voice;
use dv_voice::{Voice, WavenetConfig};

/// The GPU samplers: parity with the CPU reference, then timings (kernel 1 per utterance, kernel 2 many streams).
#[derive(Parser, Debug)]
#[command(name = "gpu_bench")]
struct Cli {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Subcommand, Debug)]
#[allow(clippy::enum_variant_names)] // the variants are the `gpu-*` subcommands
enum BenchCommand {
    /// Kernel 1 (one utterance, one launch): parity, then real-time factor.
    GpuSingle(single::SingleArgs),
    /// Kernel 2 (many streams): parity, then throughput at each stream count.
    GpuStreams(streams::StreamsArgs),
    /// The tile kernel's activation rounding modelled on the CPU: predicted parity per voice.
    GpuEmulate(emulate::EmulateArgs),
}

/// The flags every subcommand takes.
#[derive(Args, Debug)]
struct Common {
    /// Table 2 sizes with random weights (comma-separated, or "all").
    #[arg(long, default_value = "all")]
    presets: String,
    /// Also run these voice packages (trained weights).
    #[arg(long)]
    voice: Vec<PathBuf>,
    /// Samples compared with the CPU reference per configuration.
    #[arg(long, default_value_t = 512)]
    parity_steps: usize,
    /// Precisions: f32, bf16 or both.
    #[arg(long, value_enum, default_value_t = PrecisionArg::Both)]
    precision: PrecisionArg,
    /// Append results here as JSON lines.
    #[arg(long)]
    json: Option<PathBuf>,
    /// The GPU: `cuda` (GPU 0), `cuda:N` or its ordinal `N`.
    #[arg(long, default_value = "cuda:0", value_parser = parse_gpu)]
    device: usize,
}

/// `--device`: a GPU's CUDA ordinal, spelled as every `dv` command spells a
/// device (`cuda` is GPU 0, `cuda:N`), or the bare ordinal `N`; `cpu` is
/// refused, since everything here but `gpu-emulate` runs on a GPU.
fn parse_gpu(s: &str) -> Result<usize, String> {
    if let Ok(n) = s.parse::<usize>() {
        return Ok(n);
    }
    match s {
        "cpu" => Err("this runs on a GPU: cuda or cuda:N".into()),
        "cuda" => Ok(0),
        _ => match s.strip_prefix("cuda:").map(str::parse) {
            Some(Ok(n)) => Ok(n),
            _ => Err("not cpu, cuda or cuda:N".into()),
        },
    }
}

/// `--precision`: the weight precisions to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PrecisionArg {
    F32,
    Bf16,
    Both,
}

/// The voices `--presets` and `--voice` name: each Table 2 size with random
/// weights (seed 7), then each voice package.
fn voices(c: &Common) -> anyhow::Result<Vec<(String, Voice)>> {
    let mut out = Vec::new();
    let names: Vec<String> = if c.presets == "all" {
        dv_voice::PRESETS.iter().map(|(n, _)| n.to_string()).collect()
    } else if c.presets.is_empty() || c.presets == "none" {
        vec![]
    } else {
        c.presets.split(',').map(str::to_string).collect()
    };
    for n in names {
        let cfg = WavenetConfig::preset(&n).with_context(|| format!("--presets: no Table 2 size {n}"))?;
        out.push((format!("{n} (random)"), random_voice(cfg, 7)?));
    }
    for p in &c.voice {
        out.push((p.display().to_string(), Voice::read(p)?));
    }
    Ok(out)
}

/// Whether each precision to run is bfloat16.
fn precisions(c: &Common) -> Vec<bool> {
    match c.precision {
        PrecisionArg::F32 => vec![false],
        PrecisionArg::Bf16 => vec![true],
        PrecisionArg::Both => vec![false, true],
    }
}

fn prec(bf16: bool) -> &'static str {
    if bf16 {
        "bf16"
    } else {
        "f32"
    }
}

/// The bound each precision's distributions must meet (issue 9).
fn tolerance(bf16: bool) -> f64 {
    if bf16 {
        1e-3
    } else {
        1e-5
    }
}

/// `--json`: results appended as JSON lines, or nowhere.
struct JsonOut(Option<std::fs::File>);

impl JsonOut {
    fn new(p: &Option<PathBuf>) -> anyhow::Result<Self> {
        Ok(Self(match p {
            Some(p) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .with_context(|| format!("{}", p.display()))?,
            ),
            None => None,
        }))
    }

    fn put(&mut self, v: serde_json::Value) -> anyhow::Result<()> {
        if let Some(f) = &mut self.0 {
            writeln!(f, "{v}")?;
        }
        Ok(())
    }
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        BenchCommand::GpuSingle(a) => single::run(a),
        BenchCommand::GpuStreams(a) => streams::run(a),
        BenchCommand::GpuEmulate(a) => emulate::run(a),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn device_takes_a_gpu_by_name_or_ordinal() {
        assert_eq!(parse_gpu("cuda"), Ok(0));
        assert_eq!(parse_gpu("cuda:0"), Ok(0));
        assert_eq!(parse_gpu("cuda:2"), Ok(2));
        assert_eq!(parse_gpu("2"), Ok(2));
        assert_eq!(parse_gpu("cpu").unwrap_err(), "this runs on a GPU: cuda or cuda:N");
        for bad in ["-1", "", "gpu", "CPU", "Cuda", "cuda:", "cuda:x", "cuda:-1", "cuda0"] {
            assert_eq!(parse_gpu(bad).unwrap_err(), "not cpu, cuda or cuda:N", "{bad:?}");
        }
    }

    /// clap refuses `--device cpu` before anything runs, naming the flag,
    /// the value and what it takes.
    #[test]
    fn device_cpu_is_refused_naming_the_flag() {
        Cli::command().debug_assert();
        for verb in ["gpu-single", "gpu-streams", "gpu-emulate"] {
            let e = Cli::try_parse_from(["gpu_bench", verb, "--device", "cpu"]).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{verb}");
            let msg = e.to_string();
            for want in ["'cpu'", "--device", "cuda or cuda:N"] {
                assert!(msg.contains(want), "{verb}: no {want:?} in {msg}");
            }
        }
    }
}
