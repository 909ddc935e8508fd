//! `dv bench`: the GPU samplers of dv-gpu, checked and timed on the device
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
//!
//! * `gpu-emulate`: no GPU needed: the tile kernel's activation rounding
//!   modelled on the CPU (`dv_gpu::emulate`), the |Δp| its parity check would
//!   find for each voice, with two-term bfloat16 and with half-precision
//!   activations, and for each of the four rounded inputs alone.
//!
//! Results are printed as a table and appended to `--json` as JSON lines.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use dv_gpu::parity::{multi_parity, single_parity};
use dv_gpu::{GpuDevice, GpuSampling, MultiKernel, MultiPlan, MultiStream, SinglePlan, SingleStream, Weights};
use dv_synth::random::{random_conditioning, random_voice};
use dv_synth::Sampling;
use dv_voice::{Voice, WavenetConfig};
use serde_json::json;

use crate::device::{self, Gpu};

#[derive(Subcommand, Debug)]
#[allow(clippy::enum_variant_names)] // the variants are the `dv bench gpu-*` subcommands
pub enum BenchCommand {
    /// Kernel 1 (one utterance, one launch): parity, then real-time factor.
    GpuSingle(SingleArgs),
    /// Kernel 2 (many streams): parity, then throughput at each stream count.
    GpuStreams(StreamsArgs),
    /// The tile kernel's activation rounding modelled on the CPU: predicted parity per voice.
    GpuEmulate(EmulateArgs),
}

#[derive(Args, Debug)]
pub struct EmulateArgs {
    #[command(flatten)]
    common: Common,
    /// The streams emulated per voice, by the conditioning-pool row each starts from, as
    /// `gpu-streams` starts its slots (default: the four it checks at 32 streams per block;
    /// the last runs 3/4 of the steps, as there).
    #[arg(long, value_delimiter = ',', default_value = "0,1,35,62")]
    rows: Vec<usize>,
}

#[derive(Args, Debug)]
pub struct Common {
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
    #[arg(long, default_value = "cuda:0", value_parser = device::parse_gpu)]
    device: Gpu,
}

#[derive(Args, Debug)]
pub struct SingleArgs {
    #[command(flatten)]
    common: Common,
    /// Cluster sizes to try (wavenet_single: every layer split over the cluster).
    #[arg(long, value_delimiter = ',', default_value = "8,16")]
    clusters: Vec<usize>,
    /// Helper blocks to try with wavenet_small (the residual chain in one
    /// block; sizes whose chain does not fit one block are reported as not run).
    #[arg(long, value_delimiter = ',', default_value = "4,8")]
    helpers: Vec<usize>,
    /// wavenet_single: warps sharing each layer's gate (1, or 2 when r >= 64;
    /// 0 picks 2 where r allows, as `SinglePlan::new` does).
    #[arg(long, default_value_t = 0)]
    gate_warps: usize,
    /// wavenet_small: warps sharing each layer's products (1, 2 or 4; 2
    /// measured fastest on an H200).
    #[arg(long, default_value_t = 2)]
    chain_warps: usize,
    /// wavenet_chain (r = 32 or 64, bfloat16): layers per chain block to try
    /// (the chain split by layers over several blocks).
    #[arg(long, value_delimiter = ',', default_value = "8")]
    layers_per_block: Vec<usize>,
    /// wavenet_chain: chain warps per chain block to try (r / 32 times 1, 2
    /// or 4; the others are reported as not run).
    #[arg(long, value_delimiter = ',', default_value = "4,8")]
    split_warps: Vec<usize>,
    /// Seconds of audio per timed launch.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Also read the kernel's per-phase clock (one extra launch each).
    #[arg(long)]
    profile: bool,
    /// Time configurations that fail parity too (for ablations built with
    /// DV_GPU_DEFINES; their rows say FAIL, and they do not fail the run).
    #[arg(long)]
    force_timing: bool,
}

#[derive(Args, Debug)]
pub struct StreamsArgs {
    #[command(flatten)]
    common: Common,
    /// Stream counts to time.
    #[arg(long, value_delimiter = ',', default_value = "1024,2048,4096,8192")]
    streams: Vec<usize>,
    /// Kernel-2 sources to run: `fastest` (`MultiPlan::fastest`, the measured
    /// best for the size and device; --per-block, --threads and --stages are
    /// its own), `tiles` (wavenet_tiles.cu, bfloat16 weights,
    /// activations as two bfloat16 terms), `tiles-f16` (the same, activations
    /// in half precision, one pass), `tiles-wg` / `tiles-wg-f16` (the same
    /// with warpgroup MMAs, sm_90a, 64 streams per block), `cols`
    /// (wavenet_cols.cu: the streams as the warpgroup MMAs' N dimension, any
    /// multiple of 8 per block up to 64; r = 64) and/or `panels`
    /// (wavenet_multi.cu).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "fastest")]
    kernels: Vec<Kernel2>,
    /// Stream slots per block.
    #[arg(long, value_delimiter = ',', default_value = "64")]
    per_block: Vec<usize>,
    #[arg(long, default_value_t = 256)]
    threads: usize,
    /// Shared-memory weight-panel buffers and the bytes of each (`tiles`:
    /// weight-chunk slots, 2 or 3, and their least size; a slot always holds
    /// one layer's matrices).
    #[arg(long, default_value_t = 2)]
    stages: usize,
    #[arg(long, default_value_t = 28672)]
    panel_bytes: usize,
    /// Samples per stream per timed launch.
    #[arg(long, default_value_t = 2048)]
    steps: usize,
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Peak FLOP/s and device-memory bytes/s for the floors (measured ceilings).
    #[arg(long, default_value_t = 790e12)]
    peak_flops: f64,
    #[arg(long, default_value_t = 4.3e12)]
    peak_bytes: f64,
    /// Time configurations that fail parity too (ablations built with
    /// DV_GPU_DEFINES; they still count as failures).
    #[arg(long)]
    force_timing: bool,
    /// Give every stream conditioning rows of its own (as a server's streams
    /// have), instead of all streams reading one small shared pool (the
    /// default: rows in L2 whatever the stream count).
    #[arg(long)]
    distinct_conditioning: bool,
}

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

/// `--precision`: the weight precisions to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PrecisionArg {
    F32,
    Bf16,
    Both,
}

/// `--kernels`: the kernel-2 sources of `dv bench gpu-streams`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Kernel2 {
    #[value(name = "fastest")]
    Fastest,
    #[value(name = "tiles")]
    Tiles,
    #[value(name = "tiles-f16")]
    TilesF16,
    #[value(name = "tiles-wg")]
    TilesWg,
    #[value(name = "tiles-wg-f16")]
    TilesWgF16,
    #[value(name = "cols")]
    Cols,
    #[value(name = "panels")]
    Panels,
}

impl std::fmt::Display for Kernel2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.to_possible_value().expect("no variant is skipped").get_name())
    }
}

/// Whether each precision to run is bfloat16.
fn precisions(c: &Common) -> Vec<bool> {
    match c.precision {
        PrecisionArg::F32 => vec![false],
        PrecisionArg::Bf16 => vec![true],
        PrecisionArg::Both => vec![false, true],
    }
}

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

/// The bound each precision's distributions must meet (issue 9).
fn tolerance(bf16: bool) -> f64 {
    if bf16 {
        1e-3
    } else {
        1e-5
    }
}

pub fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::GpuSingle(a) => single(a),
        BenchCommand::GpuStreams(a) => streams(a),
        BenchCommand::GpuEmulate(a) => emulate(a),
    }
}

fn emulate(a: EmulateArgs) -> anyhow::Result<()> {
    use dv_gpu::emulate::{drift, Activations, Rounding};
    let mut json = JsonOut::new(&a.common.json)?;
    let n = a.common.parity_steps;
    if a.rows.is_empty() || n == 0 {
        anyhow::bail!("--rows and --parity-steps: at least one stream of at least one step to emulate");
    }
    println!("| voice | activations | rounded | predicted max|Δp| (pool rows {:?}, {n} steps) | bound |", a.rows);
    println!("|---|---|---|---|---|");
    for (name, voice) in voices(&a.common)? {
        let hop = voice.config().hop();
        // The pool and stream starts of `gpu-streams`' parity check (seed 5, stream k from row k).
        let slots = a.rows.iter().max().map_or(0, |m| m + 1);
        let pool = random_conditioning(voice.config(), n.div_ceil(hop) + slots + 1, 5);
        let w = pool.width();
        let mut cases: Vec<(&str, Activations, Rounding)> = vec![
            ("all four", Activations::Bf16TwoTerms, Rounding::kernel(Activations::Bf16TwoTerms)),
            ("all four", Activations::F16, Rounding::kernel(Activations::F16)),
        ];
        let none = Rounding { kind: Activations::F16, ..Rounding::none() };
        cases.push(("[x(t-d), x(t)] only", Activations::F16, Rounding { dilated_input: true, ..none }));
        cases.push(("h only", Activations::F16, Rounding { gate_output: true, ..none }));
        cases.push(("relu(skip) only", Activations::F16, Rounding { skip_relu: true, ..none }));
        cases.push(("relu layer output only", Activations::F16, Rounding { relu_output: true, ..none }));
        cases.push((
            "all but [x(t-d), x(t)]",
            Activations::F16,
            Rounding { dilated_input: false, ..Rounding::kernel(Activations::F16) },
        ));
        for (what, kind, round) in cases {
            let mut worst = 0f64;
            for (i, &k) in a.rows.iter().enumerate() {
                let steps = if i + 1 == a.rows.len() { n / 2 + n / 4 } else { n };
                let frames = n.div_ceil(hop);
                let rows = dv_synth::Conditioning::new(frames, w, pool.data()[k * w..(k + frames) * w].to_vec())?;
                worst = worst.max(drift(&voice, &rows, steps, &round)?);
            }
            let kind_name = match kind {
                Activations::Bf16TwoTerms => "bf16 two terms (tiles)",
                Activations::F16 => "f16 (tiles-f16)",
                Activations::F32 => "f32",
            };
            let verdict = if worst <= tolerance(true) { "pass" } else { "FAIL" };
            println!("| {name} | {kind_name} | {what} | {worst:.2e} | 1e-3: {verdict} |");
            json.put(json!({
                "bench": "gpu-emulate", "voice": name, "activations": kind_name, "rounded": what,
                "rows": a.rows, "steps": n, "max_prob_diff": worst,
            }))?;
        }
    }
    Ok(())
}

fn single(a: SingleArgs) -> anyhow::Result<()> {
    let dev = Arc::new(GpuDevice::new(a.common.device.0)?);
    println!(
        "{} (compute {:?}, {} SMs, {} B shared/block)",
        dev.name(),
        dev.compute_capability(),
        dev.multiprocessors(),
        dev.shared_memory_limit()
    );
    let mut json = JsonOut::new(&a.common.json)?;
    let mut failed = 0;
    let n = (a.seconds * dv_gpu::SAMPLE_RATE) as usize;
    println!("| voice | precision | cluster | threads | W in smem | parity max|Δp| | mode mismatches | ms / {:.2} s | µs / sample | real-time factor |", a.seconds);
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (name, voice) in voices(&a.common)? {
        let w = Weights::from_voice(&voice)?;
        let frames = n.div_ceil(w.sizes.hop).max(a.common.parity_steps.div_ceil(w.sizes.hop));
        let cond = random_conditioning(voice.config(), frames, 3);
        for &bf16 in &precisions(&a.common) {
            // Cluster sizes for wavenet_single, helper counts for wavenet_small,
            // then (layers per block, chain warps) for wavenet_chain.
            let kinds = a
                .clusters
                .iter()
                .map(|&c| (c, 0, 0))
                .chain(a.helpers.iter().map(|&h| (h + 1, h, 0)))
                .chain(a.layers_per_block.iter().flat_map(|&l| a.split_warps.iter().map(move |&w| (w, 0, l))));
            for (cluster, helpers, lpb) in kinds {
                {
                    let smem = dev.shared_memory_limit();
                    let planned = if lpb > 0 {
                        if bf16 {
                            SinglePlan::chain_split(&w.sizes, lpb, cluster, smem)
                        } else {
                            Err(dv_gpu::GpuError::Unsupported { what: "wavenet_chain in float32".into() })
                        }
                    } else if helpers > 0 {
                        SinglePlan::chain_block(&w.sizes, helpers, a.chain_warps, bf16, smem)
                    } else {
                        match a.gate_warps {
                            0 => SinglePlan::new(&w.sizes, cluster, bf16, smem),
                            g => SinglePlan::with_gate_warps(&w.sizes, cluster, g, bf16, smem),
                        }
                    };
                    let cluster = if lpb > 0 {
                        format!("{} x {lpb} layers + 2, {cluster} chain warps", w.sizes.layers.div_ceil(lpb))
                    } else if helpers > 0 {
                        format!("1+{helpers}")
                    } else {
                        cluster.to_string()
                    };
                    let plan = match planned {
                        Ok(p) => p,
                        Err(e) => {
                            println!("| {name} | {} | {cluster} | – | – | not run: {e} |||||", prec(bf16));
                            continue;
                        }
                    };
                    let threads = plan.threads;
                    let gpu = match SingleStream::new(dev.clone(), &w, plan) {
                        Ok(g) => g,
                        Err(e) => {
                            println!("| {name} | {} | {cluster} | {threads} | – | failed: {e} |||||", prec(bf16));
                            failed += 1;
                            continue;
                        }
                    };
                    // bf16: the reference runs the same rounded weights (the
                    // rounding itself is a property of the model, not the kernel).
                    let reference = if bf16 { dv_gpu::parity::bf16_rounded(&voice)? } else { voice.clone() };
                    let par = single_parity(&gpu, &reference, &cond, a.common.parity_steps)?;
                    let ok =
                        par.max_prob_diff <= tolerance(bf16) && (bf16 || par.mode_mismatches == 0) && par.draws_ok();
                    eprintln!(
                        "  {name} {cluster}: direct draws replayed on the CPU ({:?}): {} of {} differ",
                        plan.draw_rule(),
                        par.draw_mismatches,
                        par.draw_steps
                    );
                    let timing = if ok || a.force_timing {
                        Some(dv_gpu::time_single(&gpu, &cond, n, GpuSampling::new(Sampling::Direct)?, a.repeats)?)
                    } else {
                        None
                    };
                    if !ok && !a.force_timing {
                        failed += 1;
                    }
                    let (phases, clock) = if (ok || a.force_timing) && a.profile {
                        let run = gpu.run_profiled(&cond, n.min(8192), GpuSampling::new(Sampling::Direct)?, 9)?;
                        (run.phase_cycles, run.clock)
                    } else {
                        (None, None)
                    };
                    let (ms, us, rtf) = timing
                        .as_ref()
                        .map_or((f64::NAN, f64::NAN, f64::NAN), |t| (t.median_ms, t.us_per_sample, t.real_time_factor));
                    println!(
                        "| {name} | {} | {cluster} | {threads} | {} | {:.2e}{} | {}/{} | {ms:.1} | {us:.2} | {rtf:.2}x |",
                        prec(bf16),
                        plan.smem_weights,
                        par.max_prob_diff,
                        if ok { "" } else { " FAIL" },
                        par.mode_mismatches,
                        par.steps,
                    );
                    if let Some(c) = phases {
                        let per = n.min(8192) as f64;
                        let total: i64 = c.iter().sum();
                        let parts: Vec<String> = c
                            .iter()
                            .zip(if plan.helpers > 0 { dv_gpu::PROFILE_PHASES_SMALL } else { dv_gpu::PROFILE_PHASES })
                            .map(|(&v, name)| {
                                format!("{name} {:.0} ({:.0}%)", v as f64 / per, 100.0 * v as f64 / total as f64)
                            })
                            .collect();
                        eprintln!(
                            "  cycles per sample, block 0 thread 0: {:.0} = {}",
                            total as f64 / per,
                            parts.join("; ")
                        );
                    }
                    if let Some(c) = &clock {
                        let per = n.min(8192) as f64;
                        let f = |r: std::ops::Range<usize>| {
                            c[r].iter().map(|&v| format!("{:.0}", v as f64 / per)).collect::<Vec<_>>().join(" ")
                        };
                        let blocks = w.sizes.layers.div_ceil(plan.layers_per_block);
                        eprintln!(
                            "  cycles per sample: chain blocks' layers {}; relu block wait {} work {}; output block wait {} work {} (sampling {}); block 0 per layer {}",
                            f(0..blocks),
                            f(16..17),
                            f(17..18),
                            f(18..19),
                            f(19..20),
                            f(28..29),
                            f(20..20 + plan.layers_per_block.min(8))
                        );
                    }
                    json.put(json!({
                        "clock": clock, "clock_meaning": clock.as_ref().map(|_| dv_gpu::CHAIN_CLOCK),
                        "phase_cycles": phases.map(|c| c.to_vec()),
                        "bench": "gpu-single", "device": dev.name(), "voice": name, "sizes": w.sizes.name(),
                        "bf16": bf16, "cluster": cluster, "threads": threads, "smem_weights": plan.smem_weights,
                        "parity_steps": par.steps, "max_prob_diff": par.max_prob_diff, "mode_mismatches": par.mode_mismatches,
                        "draw_rule": format!("{:?}", plan.draw_rule()), "draw_mismatches": par.draw_mismatches,
                        "parity_ok": ok, "samples": n, "median_ms": ms, "us_per_sample": us, "real_time_factor": rtf,
                    }))?;
                }
            }
        }
    }
    anyhow::ensure!(failed == 0, "{failed} configuration(s) failed parity or could not be built");
    Ok(())
}

fn prec(bf16: bool) -> &'static str {
    if bf16 {
        "bf16"
    } else {
        "f32"
    }
}

fn streams(a: StreamsArgs) -> anyhow::Result<()> {
    let dev = Arc::new(GpuDevice::new(a.common.device.0)?);
    println!("{} (compute {:?}, {} SMs)", dev.name(), dev.compute_capability(), dev.multiprocessors());
    let mut json = JsonOut::new(&a.common.json)?;
    let mut failed = 0;
    for (name, voice) in voices(&a.common)? {
        let w = Weights::from_voice(&voice)?;
        let fl = dv_gpu::floor(&w.sizes, a.peak_flops, a.peak_bytes);
        println!(
            "\n{name}: floors {:.0} real-time streams by arithmetic ({:.2} MFLOP/sample at {:.0} TFLOP/s), {:.0} by device memory ({} B/sample at {:.1} TB/s)",
            fl.streams_by_flops, fl.flop_per_sample / 1e6, a.peak_flops / 1e12, fl.streams_by_bytes, fl.dram_bytes_per_sample, a.peak_bytes / 1e12
        );
        let hop = w.sizes.hop;
        for &kernel in &a.kernels {
            for &bf16 in &precisions(&a.common) {
                let per_blocks = if kernel == Kernel2::Fastest { &a.per_block[..1] } else { &a.per_block[..] };
                for &per_block in per_blocks {
                    let mma = bf16;
                    let smem = dev.shared_memory_limit();
                    use Kernel2::*;
                    let plan = match kernel {
                        Fastest if bf16 => MultiPlan::fastest(&w.sizes, dev.compute_capability(), smem),
                        Panels => MultiPlan::new(&w.sizes, per_block, a.threads, bf16, a.stages, a.panel_bytes, smem),
                        Tiles | TilesF16 if bf16 => {
                            let f16 = kernel == TilesF16;
                            MultiPlan::tiles(&w.sizes, per_block, a.threads, a.stages, a.panel_bytes, f16, smem)
                        }
                        TilesWg | TilesWgF16 if bf16 && per_block == 64 => {
                            let f16 = kernel == TilesWgF16;
                            MultiPlan::tiles_wg(&w.sizes, a.threads, a.stages, a.panel_bytes, f16, smem)
                        }
                        TilesWg | TilesWgF16 if bf16 => {
                            println!("{kernel}: not run at {per_block} streams per block: warpgroup MMAs take 64");
                            continue;
                        }
                        Cols if bf16 => MultiPlan::cols(&w.sizes, per_block, a.stages, a.panel_bytes, smem),
                        Tiles | TilesF16 | TilesWg | TilesWgF16 | Cols | Fastest => {
                            println!("{kernel}, f32: not run: the tile kernel takes bfloat16 weights only");
                            continue;
                        }
                    };
                    let plan = match plan {
                        Ok(p) => p,
                        Err(e) => {
                            println!("{kernel} {} per block {per_block}: not run: {e}", prec(bf16));
                            continue;
                        }
                    };
                    let per_block = plan.streams_per_block;
                    let kname = match (plan.wgmma, plan.f16) {
                        _ if plan.kernel == MultiKernel::Cols => "wavenet_cols",
                        (true, true) => "wavenet_tiles-wg-f16",
                        (true, false) => "wavenet_tiles-wg",
                        (false, true) => "wavenet_tiles-f16",
                        (false, false) => plan.entry(),
                    };
                    // Parity: two blocks of slots, every slot live, four checked.
                    let pstreams = 2 * per_block;
                    let pool =
                        random_conditioning(voice.config(), a.common.parity_steps.div_ceil(hop) + pstreams + 1, 5);
                    let mut gpu = MultiStream::new(dev.clone(), &w, plan, pstreams, &pool)?;
                    let reference = if bf16 { dv_gpu::parity::bf16_rounded(&voice)? } else { voice.clone() };
                    let par = multi_parity(
                        &mut gpu,
                        &reference,
                        &pool,
                        a.common.parity_steps,
                        &[0, 1, per_block + 3, pstreams - 2],
                    )?;
                    let ok = par.max_prob_diff <= tolerance(bf16) && (bf16 || par.mode_mismatches == 0);
                    println!(
                    "{kname} {} ({}), {per_block} streams/block, {} threads: parity max|Δp| {:.2e}, mode mismatches {}/{}{}",
                    prec(bf16),
                    if mma { "tensor cores" } else { "fp32 FMA" },
                    plan.threads,
                    par.max_prob_diff,
                    par.mode_mismatches,
                    par.steps,
                    if ok { "" } else if a.force_timing { "  FAIL (timed anyway: --force-timing)" } else { "  FAIL: not timed" }
                );
                    json.put(json!({
                    "bench": "gpu-streams-parity", "kernel": kname, "device": dev.name(), "voice": name, "sizes": w.sizes.name(), "bf16": bf16,
                    "mma": mma, "per_block": per_block, "threads": plan.threads, "parity_steps": par.steps,
                    "max_prob_diff": par.max_prob_diff, "mode_mismatches": par.mode_mismatches, "parity_ok": ok,
                }))?;
                    if !ok {
                        failed += 1;
                        if !a.force_timing {
                            continue;
                        }
                    }
                    drop(gpu);
                    let per_stream = (a.repeats + 1) * a.steps.div_ceil(hop);
                    let (pool_frames, stride) = if a.distinct_conditioning {
                        (
                            per_stream
                                * a.streams.iter().copied().max().unwrap_or(1).next_multiple_of(plan.streams_per_block)
                                + 64,
                            per_stream,
                        )
                    } else {
                        (per_stream + 64, 7)
                    };
                    let pool = random_conditioning(voice.config(), pool_frames, 9);
                    println!(
                        "| streams | ms / {} steps | samples/s per stream | real-time factor | samples/s in all |{}",
                        a.steps,
                        if a.distinct_conditioning { " (each stream its own conditioning rows)" } else { "" }
                    );
                    println!("|---|---|---|---|---|");
                    let mut best = 0;
                    for &n in &a.streams {
                        let mut gpu = MultiStream::new(dev.clone(), &w, plan, n, &pool)?;
                        let t = dv_gpu::time_multi(
                            &mut gpu,
                            pool.frames(),
                            hop,
                            a.steps,
                            GpuSampling::new(Sampling::Direct)?,
                            a.repeats,
                            stride,
                        )?;
                        println!(
                            "| {} | {:.1} | {:.0} | {:.2}x | {:.3e} |",
                            t.streams, t.median_ms, t.per_stream_rate, t.real_time_factor, t.total_rate
                        );
                        if t.real_time_factor >= 1.0 {
                            best = best.max(t.streams);
                        }
                        json.put(json!({
                        "bench": "gpu-streams", "kernel": kname, "device": dev.name(), "voice": name, "sizes": w.sizes.name(), "bf16": bf16,
                        "mma": mma, "per_block": per_block, "threads": plan.threads, "streams": t.streams, "steps": t.steps,
                        "median_ms": t.median_ms, "per_stream_rate": t.per_stream_rate, "real_time_factor": t.real_time_factor,
                        "total_rate": t.total_rate, "floor_streams_flops": fl.streams_by_flops, "floor_streams_bytes": fl.streams_by_bytes,
                        "distinct_conditioning": a.distinct_conditioning,
                    }))?;
                    }
                    println!("largest real-time stream count tried: {best}");
                    if let Some(&n) = a.streams.last() {
                        let mut gpu = MultiStream::new(dev.clone(), &w, plan, n, &pool)?;
                        let starts: Vec<dv_gpu::StreamStart> = (0..gpu.slots())
                            .map(|s| dv_gpu::StreamStart { slot: s, cond_frame: 0, samples: a.steps, seed: s as u64 })
                            .collect();
                        gpu.start(&starts)?;
                        let prof = gpu.advance_profiled(a.steps, GpuSampling::new(Sampling::Direct)?)?;
                        if let Some(p) = prof.panel_cycles {
                            println!(
                            "weight panels/chunks per step, block 0 thread 0: waiting {:.0} cycles, multiplying {:.0}",
                            p[0] as f64 / a.steps as f64,
                            p[1] as f64 / a.steps as f64
                        );
                        }
                        if let Some(c) = prof.phase_cycles {
                            let total: i64 = c.iter().sum();
                            let parts: Vec<String> = c
                                .iter()
                                .zip(if plan.kernel != MultiKernel::Panels {
                                    dv_gpu::PROFILE_PHASES_TILES
                                } else {
                                    dv_gpu::PROFILE_PHASES_MULTI
                                })
                                .map(|(&v, name)| {
                                    format!(
                                        "{name} {:.0} ({:.0}%)",
                                        v as f64 / a.steps as f64,
                                        100.0 * v as f64 / total as f64
                                    )
                                })
                                .collect();
                            println!(
                                "cycles per step, block 0 thread 0, {n} streams: {:.0} = {}",
                                total as f64 / a.steps as f64,
                                parts.join("; ")
                            );
                            json.put(json!({"bench": "gpu-streams-profile", "kernel": kname, "sizes": w.sizes.name(), "bf16": bf16, "streams": n, "phase_cycles": c.to_vec()}))?;
                        }
                    }
                }
            }
        }
    }
    anyhow::ensure!(failed == 0, "{failed} configuration(s) failed parity");
    Ok(())
}
