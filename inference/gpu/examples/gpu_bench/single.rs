//! `gpu-single`: kernel 1 (one utterance per launch). Each plan (cluster
//! sizes for `wavenet_single`, helper blocks for `wavenet_small`, layers per
//! block and chain warps for `wavenet_chain`) is checked against the CPU
//! reference, then timed: real-time factor for every voice and precision.

use std::sync::Arc;

use clap::Args;
use dv_gpu::parity::single_parity;
use dv_gpu::{GpuDevice, GpuSampling, SinglePlan, SingleStream, Weights};
use dv_synth::random::random_conditioning;
use dv_synth::Sampling;
use serde_json::json;

use crate::{prec, precisions, tolerance, voices, Common, JsonOut};

#[derive(Args, Debug)]
pub(crate) struct SingleArgs {
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

pub(crate) fn run(a: SingleArgs) -> anyhow::Result<()> {
    let dev = Arc::new(GpuDevice::new(a.common.device)?);
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
                    let ok = par.max_prob_diff <= tolerance(bf16)
                        && (bf16 || par.mode_mismatches + par.lead_mismatches == 0)
                        && par.lead_not_silent == 0
                        && par.draws_ok();
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
