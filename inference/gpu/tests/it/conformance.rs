//! The sampler conformance suite (issue 33): the same cases on every
//! WaveNet sampler this machine has, each against its reference with the
//! tolerances of the example `gpu_bench` (issue 9), through `dv-conformance`'s harness.
//!
//! | backend | reference | bound |
//! | --- | --- | --- |
//! | `cpu-scalar` | `dv_gpu::emulate`'s unrounded step, a second CPU implementation of FORMAT.md, teacher-forced on the scalar's own stream | max \|Δp\| ≤ 1e-5 |
//! | `avx2-fma`, `avx2-fma-2threads` | the scalar reference (`Kernel::Scalar`) | max \|Δp\| ≤ 1e-4, mode streams identical |
//! | `cuda-single-f32` (kernel 1, `SinglePlan::new`) | the scalar reference | max \|Δp\| ≤ 1e-5, mode streams identical, ≤ 1 % of replayed direct draws differ |
//! | `cuda-single-bf16`, `cuda-chain-bf16` (`SinglePlan::chain_split`, what `dv synth --device cuda` runs) | the scalar reference on the bfloat16-rounded weights | max \|Δp\| ≤ 1e-3, draws as above |
//! | `cuda-multi` (kernel 2, `MultiPlan::fastest`; `dv serve --device cuda` runs `MultiPlan::for_streams`, the same kernel at 8 to 40 streams per block, and checks its own plan the same way at start-up) | the same, per checked stream, streams leaving and joining between launches | max \|Δp\| ≤ 1e-3 |
//! | `cuda-conditioning` (`GpuConditioner`, `dv serve --device cuda`'s conditioning network: sentences of several lengths in one batch, at scattered arena frames) | `CondLayout`'s CPU reference of the kernels, and `dv_synth::ConditioningNetwork` in the pool's order | max \|Δ\| ≤ 1e-4 and 1e-3 |
//!
//! The CPU backends always run (AVX2 where the CPU has it); the CUDA ones
//! when a device opens, else each prints `skipped: no CUDA device …`. A
//! kernel's typed refusal of a size (`GpuError::Unsupported`) is reported
//! as not applicable, any other error fails the case.

use std::sync::Arc;

use dv_conformance::{Checked, Measure, Outcome, Report, Suite, Tolerance};
use dv_gpu::emulate::{forward, Rounding, State};
use dv_gpu::parity::{bf16_rounded, multi_parity, reference, single_parity, with_parity_voicing};
use dv_gpu::{GpuDevice, GpuError, MultiPlan, MultiStream, SinglePlan, SingleStream, Weights};
use dv_synth::random::{random_conditioning, random_voice};
use dv_synth::{Kernel, Nonlinearity, Precision, Rng, Sampler, SamplerOptions, Sampling, ALPHABET};
use dv_voice::{Voice, WavenetConfig};

/// One sampler implementation.
enum Backend {
    Cpu {
        kernel: Kernel,
        threads: usize,
    },
    /// The scalar kernel on a voice with one weight off by 1e-2: must fail.
    Perturbed,
    Single {
        dev: Arc<GpuDevice>,
        bf16: bool,
        chain: bool,
    },
    Multi {
        dev: Arc<GpuDevice>,
    },
}

/// A voice size, a length, and for kernel 2 how many streams are checked.
struct Case {
    name: &'static str,
    wavenet: WavenetConfig,
    steps: usize,
    /// 1: one stream (one block of slots); else two blocks, four checked.
    streams: usize,
}

const fn table2(layers: usize, r: usize, s: usize) -> WavenetConfig {
    WavenetConfig { layers, residual_channels: r, skip_channels: s, dilation_cycle: 10 }
}

fn cases() -> Vec<Case> {
    vec![
        // The shipped voice's size (inference/voices/slt), as a synthetic voice.
        Case { name: "shipped 20x64x128, 300 steps", wavenet: table2(20, 64, 128), steps: 300, streams: 4 },
        Case { name: "20x32x128, 200 steps", wavenet: table2(20, 32, 128), steps: 200, streams: 4 },
        Case { name: "40x64x256, 160 steps", wavenet: table2(40, 64, 256), steps: 160, streams: 4 },
        Case { name: "20x64x128, 1 step", wavenet: table2(20, 64, 128), steps: 1, streams: 1 },
        Case { name: "20x64x128, 97 steps, 1 stream", wavenet: table2(20, 64, 128), steps: 97, streams: 1 },
        Case {
            name: "5x16x40 (cycle 3), 131 steps",
            wavenet: WavenetConfig { layers: 5, residual_channels: 16, skip_channels: 40, dilation_cycle: 3 },
            steps: 131,
            streams: 4,
        },
    ]
}

fn voice(c: &Case) -> Voice {
    random_voice(c.wavenet, 11).expect("a random voice of a valid size")
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// `Unsupported` (a size or plan the kernel does not take) is not applicable; the rest fail.
fn refused(e: GpuError) -> Checked<String> {
    match e {
        GpuError::Unsupported { what } => Ok(Outcome::NotApplicable(what)),
        e => Err(e.to_string()),
    }
}

fn widen(p: &[f32]) -> Vec<f64> {
    p.iter().map(|&v| v as f64).collect()
}

/// Free-running mode sampling on a CPU kernel: the stream and its distributions.
fn cpu_run(voice: &Voice, kernel: Kernel, threads: usize, c: &Case) -> Result<(Vec<u8>, Vec<f32>), String> {
    let o = SamplerOptions { precision: Precision::F32, nonlinearity: Nonlinearity::Exact, threads };
    let sampler = Sampler::new(voice, kernel, o).map_err(err)?;
    let cond = random_conditioning(voice.config(), c.steps.div_ceil(voice.config().hop()), 12);
    let mut out = vec![0u8; c.steps];
    let mut probs = Vec::with_capacity(c.steps * ALPHABET);
    sampler
        .generate_inspect(&mut sampler.make_scratch(), &cond, Sampling::Mode, &mut Rng::new(0), &mut out, |_, _, p| {
            probs.extend_from_slice(p)
        })
        .map_err(err)?;
    Ok((out, probs))
}

fn check(b: &Backend, c: &Case) -> Checked<String> {
    let voice = voice(c);
    let hop = voice.config().hop();
    let cond = random_conditioning(voice.config(), c.steps.div_ceil(hop), 12);
    match b {
        Backend::Cpu { kernel: Kernel::Scalar, .. } => {
            let (samples, probs) = cpu_run(&voice, Kernel::Scalar, 1, c)?;
            // The unrounded CPU model of dv-gpu, teacher-forced on the scalar's stream.
            let w = Weights::from_voice(&voice).map_err(err)?;
            let mut st = State::new(&w);
            let (mut y1, mut y2) = (128usize, 128usize);
            let mut model = Vec::with_capacity(probs.len());
            for (t, &y) in samples.iter().enumerate() {
                model.extend(
                    forward(&w, &mut st, &Rounding::none(), y1, y2, cond.frame(t / hop)).iter().map(|&v| v as f64),
                );
                (y2, y1) = (y1, y as usize);
            }
            Ok(Outcome::Measured(vec![Measure::close_f32("p", &probs, &model, Tolerance::abs(1e-5))]))
        }
        Backend::Cpu { kernel, threads } => {
            let (ref_samples, ref_probs) = cpu_run(&voice, Kernel::Scalar, 1, c)?;
            let (samples, probs) = cpu_run(&voice, *kernel, *threads, c)?;
            Ok(Outcome::Measured(vec![
                Measure::close_f32("p", &probs, &widen(&ref_probs), Tolerance::abs(1e-4)),
                Measure::mismatches("mode samples", &samples, &ref_samples),
            ]))
        }
        Backend::Perturbed => {
            let (ref_samples, ref_probs) = cpu_run(&voice, Kernel::Scalar, 1, c)?;
            let mut weights = voice.weights().clone();
            let (_, t) =
                weights.iter_mut().find(|(n, _)| n.starts_with("wavenet.") && n.ends_with("bias")).ok_or("no bias")?;
            t.data_mut()[0] += 1e-2;
            let bad = Voice::new(voice.config().clone(), weights).map_err(err)?;
            let (samples, probs) = cpu_run(&bad, Kernel::Scalar, 1, c)?;
            Ok(Outcome::Measured(vec![
                Measure::close_f32("p", &probs, &widen(&ref_probs), Tolerance::abs(1e-4)),
                Measure::mismatches("mode samples", &samples, &ref_samples),
            ]))
        }
        Backend::Single { dev, bf16, chain } => {
            let w = Weights::from_voice(&voice).map_err(err)?;
            let smem = dev.shared_memory_limit();
            let r = w.sizes.residual;
            let plan = if *chain {
                let (lpb, warps) = if r == 32 { (10, 4) } else { (8, 4) };
                SinglePlan::chain_split(&w.sizes, lpb, warps, smem)
            } else {
                let cluster = [16, 8, 4, 2, 1].into_iter().find(|k| r % k == 0).unwrap_or(1);
                SinglePlan::new(&w.sizes, cluster, *bf16, smem)
            };
            let plan = match plan {
                Ok(p) => p,
                Err(e) => return refused(e),
            };
            let gpu = match SingleStream::new(dev.clone(), &w, plan) {
                Ok(g) => g,
                Err(e) => return refused(e),
            };
            let reference_voice = if *bf16 { bf16_rounded(&voice).map_err(err)? } else { voice };
            let par = single_parity(&gpu, &reference_voice, &cond, c.steps).map_err(err)?;
            let mut m = vec![
                Measure {
                    what: "p".into(),
                    value: par.max_prob_diff,
                    limit: if *bf16 { 1e-3 } else { 1e-5 },
                    detail: format!("max |Δp| {:.2e} over {} steps", par.max_prob_diff, par.steps),
                },
                Measure::count(
                    "replayed draws (direct, voiced-only temperature) that differ",
                    par.draw_mismatches,
                    par.draw_steps / 100,
                    par.draw_steps,
                ),
            ];
            if !*bf16 {
                m.push(Measure::count("mode samples that differ", par.mode_mismatches, 0, par.steps));
                m.push(Measure::count(
                    "mode samples after a silent lead that differ",
                    par.lead_mismatches,
                    0,
                    par.lead_steps,
                ));
            }
            m.push(Measure::count("lead samples that are not silence", par.lead_not_silent, 0, par.lead_steps / 4));
            Ok(Outcome::Measured(m))
        }
        Backend::Multi { dev } => {
            if c.steps < 2 {
                return Ok(Outcome::NotApplicable(
                    "the kernel-2 check splits a run into two launches: needs 2 steps".into(),
                ));
            }
            let w = Weights::from_voice(&voice).map_err(err)?;
            let plan = match MultiPlan::fastest(&w.sizes, dev.compute_capability(), dev.shared_memory_limit()) {
                Ok(p) => p,
                Err(e) => return refused(e),
            };
            let per_block = plan.streams_per_block;
            let (slots, checked) = if c.streams == 1 {
                (per_block, vec![0])
            } else {
                (2 * per_block, vec![0, 1, per_block + 3, 2 * per_block - 2])
            };
            let pool = with_parity_voicing(random_conditioning(voice.config(), c.steps.div_ceil(hop) + slots + 1, 5));
            let mut gpu = match MultiStream::new(dev.clone(), &w, plan, slots, &pool) {
                Ok(g) => g,
                Err(e) => return refused(e),
            };
            let reference_voice = bf16_rounded(&voice).map_err(err)?;
            let par = multi_parity(&mut gpu, &reference_voice, &pool, c.steps, &checked).map_err(err)?;
            Ok(Outcome::Measured(vec![
                Measure {
                    what: "p".into(),
                    value: par.max_prob_diff,
                    limit: 1e-3,
                    detail: format!(
                        "max |Δp| {:.2e}, {} streams checked, {} of {} mode samples differ",
                        par.max_prob_diff,
                        checked.len(),
                        par.mode_mismatches,
                        par.steps
                    ),
                },
                Measure::count(
                    "replayed voiced-only temperature draws that differ",
                    par.draw_mismatches,
                    par.draw_steps / 100,
                    par.draw_steps,
                ),
                Measure::count("lead samples that are not silence", par.lead_not_silent, 0, par.lead_steps / 4),
            ]))
        }
    }
}

/// The scalar reference of a case is deterministic and not degenerate:
/// its mode stream varies and its distributions are not flat.
fn reference_is_informative(c: &Case) -> Result<(), String> {
    let voice = voice(c);
    let cond = random_conditioning(voice.config(), c.steps.div_ceil(voice.config().hop()), 12);
    let (samples, probs) = reference(&voice, &cond, c.steps).map_err(err)?;
    let peak = probs.iter().fold(0.0f32, |a, &b| a.max(b));
    if peak <= 0.05 {
        return Err(format!("{}: distributions too flat to test anything (peak {peak})", c.name));
    }
    if c.steps > 50 && samples.iter().all(|&y| y == samples[0]) {
        return Err(format!("{}: constant reference stream", c.name));
    }
    Ok(())
}

fn suite() -> Suite<Backend> {
    let mut s = Suite::new("samplers").backend("cpu-scalar", Backend::Cpu { kernel: Kernel::Scalar, threads: 1 });
    s = if Kernel::Avx2Fma.is_available() {
        s.backend("avx2-fma", Backend::Cpu { kernel: Kernel::Avx2Fma, threads: 1 })
            .backend("avx2-fma-2threads", Backend::Cpu { kernel: Kernel::Avx2Fma, threads: 2 })
    } else {
        s.skip("avx2-fma", "this CPU lacks AVX2/FMA").skip("avx2-fma-2threads", "this CPU lacks AVX2/FMA")
    };
    let names = ["cuda-single-f32", "cuda-single-bf16", "cuda-chain-bf16", "cuda-multi"];
    match GpuDevice::new(0) {
        Ok(dev) => {
            let dev = Arc::new(dev);
            println!("conformance samplers: CUDA device 0 is {} (compute {:?})", dev.name(), dev.compute_capability());
            s.backend(names[0], Backend::Single { dev: dev.clone(), bf16: false, chain: false })
                .backend(names[1], Backend::Single { dev: dev.clone(), bf16: true, chain: false })
                .backend(names[2], Backend::Single { dev: dev.clone(), bf16: true, chain: true })
                .backend(names[3], Backend::Multi { dev })
        }
        Err(e) => names.iter().fold(s, |s, n| s.skip(*n, format!("no CUDA device ({e})"))),
    }
}

fn run(suite: &Suite<Backend>) -> Report {
    let cases = cases();
    suite.run(&cases, |c| c.name.to_string(), check)
}

#[test]
fn every_sampler_conforms_to_its_reference() {
    for c in cases() {
        reference_is_informative(&c).unwrap();
    }
    let suite = suite();
    let report = run(&suite);
    report.assert_passed();
    // On CI the CPU backends carry the suite: every case measured on the scalar kernel.
    assert_eq!(report.measured("cpu-scalar"), cases().len());
}

#[test]
fn a_perturbed_sampler_is_caught() {
    let report = run(&Suite::new("samplers (perturbed)").backend("scalar+1e-2 bias", Backend::Perturbed));
    let measured = report.measured("scalar+1e-2 bias");
    assert_eq!(measured, cases().len());
    // Every case of more than a step leaves the bound; the 1-step case may stay within it.
    assert!(report.failures().len() >= measured - 1, "{:?}", report.failures());
}

/// The GPU conditioning network on a batch of sentences of different
/// lengths written to scattered arena frames (the serving path batches
/// whatever sentences arrive together): every sentence's projected rows
/// against the CPU reference of the kernels and against the CPU network.
#[test]
fn gpu_conditioning_batches_match_the_cpu_network() {
    use dv_gpu::{CondLayout, GpuConditioner};
    let dev = match GpuDevice::new(0) {
        Ok(d) => Arc::new(d),
        Err(e) => {
            println!("conformance cuda-conditioning: skipped: no CUDA device ({e})");
            return;
        }
    };
    let voice = random_voice(WavenetConfig::preset("20x64x128").unwrap(), 7).unwrap();
    let w = Weights::from_voice(&voice).unwrap();
    let plan = MultiPlan::cols(&w.sizes, 40, 3, 0, 227 * 1024).unwrap();
    let lay = CondLayout::new(&voice, &plan, &w).unwrap();
    let mut net = GpuConditioner::new(dev, &lay, 256, 8, 1000).unwrap();
    net.exclusive_of(plan.smem_bytes).unwrap();
    let d = lay.input_dim;
    let mut rng = Rng::new(3);
    let (lengths, at) = ([5usize, 17, 40, 1], [100usize, 0, 300, 999]);
    let feats: Vec<Vec<f32>> = lengths.iter().map(|&f| (0..f * d).map(|_| rng.uniform()).collect()).collect();
    let refs: Vec<&[f32]> = feats.iter().map(|f| f.as_slice()).collect();
    net.run(&refs, &at).unwrap();
    let cpu = dv_synth::ConditioningNetwork::new(&voice).unwrap();
    for ((f, &a), &n) in feats.iter().zip(&at).zip(&lengths) {
        let got = net.project_rows(a, n).unwrap();
        let kernels = lay.project_reference(&lay.u_reference(f));
        let network = MultiStream::pool_rows(&plan, &w, cpu.forward(f).unwrap().data());
        let diff = |e: &[f32]| {
            got.iter().zip(e).map(|(g, e)| (g - e).abs()).fold(0.0f32, |m, d| {
                if d.is_nan() {
                    f32::INFINITY
                } else {
                    m.max(d)
                }
            })
        };
        let (dk, dn) = (diff(&kernels), diff(&network));
        println!("conformance cuda-conditioning: {n} frames at {a}: max |Δ| {dk:.2e} from the kernels' reference, {dn:.2e} from the CPU network");
        assert!(dk <= 1e-4 && dn <= 1e-3, "{n} frames at {a}: {dk:.2e}, {dn:.2e}");
    }
    // A sentence past the arena's end, or a batch of more frames than it takes, is refused.
    let long = vec![0.5f32; 300 * d];
    assert!(net.run(&[&long], &[0]).is_err(), "300 frames in a batch of 256");
    assert!(net.run(&[&feats[0]], &[998]).is_err(), "past the arena");
}
