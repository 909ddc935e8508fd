//! `gpu-streams`: kernel 2 (many streams). Each plan is checked against the
//! CPU reference on two blocks of slots, then timed with every slot live:
//! samples per second per stream and in all at each stream count, beside
//! the arithmetic and memory floors, and the largest count that stays
//! faster than real time.

use std::sync::Arc;

use clap::{Args, ValueEnum};
use dv_gpu::parity::multi_parity;
use dv_gpu::{GpuDevice, GpuSampling, MultiKernel, MultiPlan, MultiStream, Weights};
use dv_synth::random::random_conditioning;
use dv_synth::Sampling;
use serde_json::json;

use crate::{prec, precisions, tolerance, voices, Common, JsonOut};

#[derive(Args, Debug)]
pub(crate) struct StreamsArgs {
    #[command(flatten)]
    common: Common,
    /// Stream counts to time.
    #[arg(long, value_delimiter = ',', default_value = "1024,2048,4096,8192")]
    streams: Vec<usize>,
    /// The sampling timed: direct, mode, temperature:T or voiced-temperature:T (the timing pool
    /// has no voicing mask, so voiced-temperature tempers every step: its worst case).
    #[arg(long, default_value = "direct", value_parser = <Sampling as std::str::FromStr>::from_str)]
    sampling: Sampling,
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

/// `--kernels`: the kernel-2 sources of `gpu-streams`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Kernel2 {
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

pub(crate) fn run(a: StreamsArgs) -> anyhow::Result<()> {
    let dev = Arc::new(GpuDevice::new(a.common.device)?);
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
                    let pool = dv_gpu::parity::with_parity_voicing(random_conditioning(
                        voice.config(),
                        a.common.parity_steps.div_ceil(hop) + pstreams + 1,
                        5,
                    ));
                    let mut gpu = MultiStream::new(dev.clone(), &w, plan, pstreams, &pool)?;
                    let reference = if bf16 { dv_gpu::parity::bf16_rounded(&voice)? } else { voice.clone() };
                    let par = multi_parity(
                        &mut gpu,
                        &reference,
                        &pool,
                        a.common.parity_steps,
                        &[0, 1, per_block + 3, pstreams - 2],
                    )?;
                    let ok = par.max_prob_diff <= tolerance(bf16)
                        && (bf16 || par.mode_mismatches == 0)
                        && par.lead_not_silent == 0
                        && par.draws_ok();
                    println!(
                    "{kname} {} ({}), {per_block} streams/block, {} threads: parity max|Δp| {:.2e}, mode mismatches {}/{}, voiced-temperature draws replayed differently {}/{}{}",
                    prec(bf16),
                    if mma { "tensor cores" } else { "fp32 FMA" },
                    plan.threads,
                    par.max_prob_diff,
                    par.mode_mismatches,
                    par.steps,
                    par.draw_mismatches,
                    par.draw_steps,
                    if ok { "" } else if a.force_timing { "  FAIL (timed anyway: --force-timing)" } else { "  FAIL: not timed" }
                );
                    json.put(json!({
                    "bench": "gpu-streams-parity", "kernel": kname, "device": dev.name(), "voice": name, "sizes": w.sizes.name(), "bf16": bf16,
                    "mma": mma, "per_block": per_block, "threads": plan.threads, "parity_steps": par.steps,
                    "max_prob_diff": par.max_prob_diff, "mode_mismatches": par.mode_mismatches, "draw_steps": par.draw_steps,
                    "draw_mismatches": par.draw_mismatches, "parity_ok": ok,
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
                            GpuSampling::new(a.sampling)?,
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
                        "distinct_conditioning": a.distinct_conditioning, "sampling": a.sampling.to_string(),
                    }))?;
                    }
                    println!("largest real-time stream count tried: {best}");
                    if let Some(&n) = a.streams.last() {
                        let mut gpu = MultiStream::new(dev.clone(), &w, plan, n, &pool)?;
                        let starts: Vec<dv_gpu::StreamStart> = (0..gpu.slots())
                            .map(|s| dv_gpu::StreamStart {
                                slot: s,
                                cond_frame: 0,
                                samples: a.steps,
                                seed: s as u64,
                                lead: 0,
                            })
                            .collect();
                        gpu.start(&starts)?;
                        let prof = gpu.advance_profiled(a.steps, GpuSampling::new(a.sampling)?)?;
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
