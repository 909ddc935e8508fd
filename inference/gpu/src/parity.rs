//! Parity of both kernels with the CPU scalar reference sampler
//! (`dv_synth`, `Kernel::Scalar`), the oracle of issue 9:
//!
//! * teacher-forced distributions: the GPU is fed the reference's own
//!   samples and must give the same per-step distributions (max |Δp|);
//! * free-running mode sampling: the GPU's sample stream must equal the
//!   reference's (exactly, for float32 weights);
//! * teacher-forced direct and voiced-only temperature sampling: each draw
//!   replayed on the CPU from the kernel's own probabilities, generator and
//!   frame voicing ([`DrawRule::draw_at`]).

use dv_synth::{Conditioning, Kernel, Rng, Sampler, SamplerOptions, Sampling, SILENCE};
use dv_voice::Voice;

use crate::cuda::{MultiStream, SingleStream, StreamStart};
use crate::error::GpuError;
use crate::model::{bf16_bits, bf16_value, A};
use crate::sampling::{DrawRule, GpuSampling};

/// How far a kernel is from the reference.
#[derive(Debug, Clone, Default)]
pub struct Parity {
    /// Steps compared (over all checked streams).
    pub steps: usize,
    /// Largest |p_gpu − p_ref| over all steps and classes.
    pub max_prob_diff: f64,
    /// Free-running mode samples that differ from the reference's.
    pub mode_mismatches: usize,
    /// Direct-sampling steps whose draw was replayed on the CPU from the
    /// kernel's own probabilities and generator ([`crate::sampling::DrawRule::draw`]), and
    /// how many of the kernel's draws differ from the replay (only a draw
    /// within rounding of a tie or a class boundary may).
    pub draw_steps: usize,
    pub draw_mismatches: usize,
    /// Free-running mode samples of runs whose first quarter is a lead
    /// (fed and returned as silence), and how many differ from the
    /// reference forced the same way (0 for float32 weights).
    pub lead_steps: usize,
    pub lead_mismatches: usize,
    /// Samples within a lead that are not silence (must be 0 on every kernel).
    pub lead_not_silent: usize,
}

impl Parity {
    fn merge(&mut self, o: &Parity) {
        self.steps += o.steps;
        self.max_prob_diff = self.max_prob_diff.max(o.max_prob_diff);
        self.mode_mismatches += o.mode_mismatches;
        self.draw_steps += o.draw_steps;
        self.draw_mismatches += o.draw_mismatches;
        self.lead_steps += o.lead_steps;
        self.lead_mismatches += o.lead_mismatches;
        self.lead_not_silent += o.lead_not_silent;
    }

    /// At most 1 % of the replayed draws differ.
    pub fn draws_ok(&self) -> bool {
        self.draw_mismatches * 100 <= self.draw_steps
    }
}

/// The reference's mode-sampled stream of the first `n` samples of `cond`
/// and its per-step distributions (`[n · A]`).
pub fn reference(voice: &Voice, cond: &Conditioning, n: usize) -> Result<(Vec<u8>, Vec<f32>), GpuError> {
    let sampler = Sampler::new(voice, Kernel::Scalar, SamplerOptions::default())?;
    let mut scratch = sampler.make_scratch();
    let mut out = vec![0u8; n];
    let mut probs = Vec::with_capacity(n * A);
    sampler.generate_inspect(&mut scratch, cond, Sampling::Mode, &mut Rng::new(0), &mut out, |_, _, p| {
        probs.extend_from_slice(p)
    })?;
    Ok((out, probs))
}

/// The reference's mode-sampled stream of `n` samples of `cond` whose
/// first `lead` are fed as silence and returned as silence.
pub fn reference_with_lead(voice: &Voice, cond: &Conditioning, n: usize, lead: usize) -> Result<Vec<u8>, GpuError> {
    let sampler = Sampler::new(voice, Kernel::Scalar, SamplerOptions::default())?;
    let mut scratch = sampler.make_scratch();
    let lead = lead.min(n);
    let mut out = vec![SILENCE; n];
    sampler.force(&mut scratch, cond, &out[..lead])?;
    sampler.generate(&mut scratch, cond, Sampling::Mode, &mut Rng::new(0), &mut out[lead..])?;
    Ok(out)
}

/// `voice` with the WaveNet's weight matrices rounded to bfloat16 (what
/// the kernels store with `bf16`; biases and embeddings stay float32): the
/// reference that isolates a kernel's arithmetic from the rounding of its
/// weights.
pub fn bf16_rounded(voice: &Voice) -> Result<Voice, GpuError> {
    let mut weights = voice.weights().clone();
    for (name, t) in weights.iter_mut() {
        let matrix = name.ends_with(".w_prev")
            || name.ends_with(".w_cur")
            || name.ends_with(".w_res")
            || ["wavenet.skip.weight", "wavenet.relu.weight", "wavenet.out.weight"].contains(&name.as_str());
        if name.starts_with("wavenet.") && matrix {
            for v in t.data_mut() {
                *v = bf16_value(bf16_bits(*v));
            }
        }
    }
    Ok(Voice::new(voice.config().clone(), weights)?)
}

fn max_diff(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (*x as f64 - *y as f64).abs()).fold(0.0, f64::max)
}

/// Kernel 1 against the reference over the first `n` samples of `cond`.
pub fn single_parity(gpu: &SingleStream, voice: &Voice, cond: &Conditioning, n: usize) -> Result<Parity, GpuError> {
    let (ref_samples, ref_probs) = reference(voice, cond, n)?;
    let mode = GpuSampling::new(Sampling::Mode)?;
    let forced = gpu.run(cond, n, mode, 0, Some(&ref_samples), true)?;
    let probs = forced.probs.expect("asked for");
    let free = gpu.run(cond, n, mode, 0, None, false)?;
    // Direct sampling, teacher-forced: each step's draw replayed from the
    // kernel's probabilities with the generator of the same seed.
    const DRAW_SEED: u64 = 5;
    let direct = gpu.run(cond, n, GpuSampling::new(Sampling::Direct)?, DRAW_SEED, Some(&ref_samples), true)?;
    let dp = direct.probs.expect("asked for");
    let rule = gpu.plan().draw_rule();
    let mut rng = Rng::new(DRAW_SEED);
    let draw_mismatches = direct
        .samples
        .iter()
        .zip(dp.chunks_exact(A))
        .filter(|(&y, p)| rule.draw((*p).try_into().expect("A classes"), &mut rng) != y as usize)
        .count();
    // Voiced-only temperature, teacher-forced over runs of voiced and
    // unvoiced frames: each step replayed at its own frame's temperature.
    let vcond = with_parity_voicing(cond.clone());
    let vs = GpuSampling::new(Sampling::VoicedTemperature(PARITY_TEMPERATURE))?;
    let voiced = gpu.run(&vcond, n, vs, DRAW_SEED, Some(&ref_samples), true)?;
    let vp = voiced.probs.expect("asked for");
    let hop = voice.config().hop();
    let mut rng = Rng::new(DRAW_SEED);
    let voiced_mismatches = (voiced.samples.iter().zip(vp.chunks_exact(A)).enumerate())
        .filter(|(t, (&y, p))| {
            let inv_tau = vs.inv_tau_for(vcond.voiced(t / hop));
            rule.draw_at((*p).try_into().expect("A classes"), &mut rng, inv_tau) != y as usize
        })
        .count();
    // A lead of a quarter of the run, then mode sampling.
    let lead = n / 4;
    let led = gpu.run_with_lead(cond, n, mode, 0, lead)?;
    let ref_led = reference_with_lead(voice, cond, n, lead)?;
    Ok(Parity {
        lead_steps: n,
        lead_mismatches: led.samples.iter().zip(&ref_led).filter(|(a, b)| a != b).count(),
        lead_not_silent: led.samples[..lead].iter().filter(|&&c| c != SILENCE).count(),
        steps: n,
        max_prob_diff: max_diff(&probs, &ref_probs).max(max_diff(&vp, &ref_probs)),
        mode_mismatches: free.samples.iter().zip(&ref_samples).filter(|(a, b)| a != b).count(),
        draw_steps: 2 * n,
        draw_mismatches: draw_mismatches + voiced_mismatches,
    })
}

/// The temperature the parity checks sample voiced frames at.
pub const PARITY_TEMPERATURE: f32 = 0.6;

/// `cond` with a voicing mask for the parity checks: runs of three voiced
/// frames, then three unvoiced, so that voiced-only temperature switches
/// mode within a launch (and within a window).
pub fn with_parity_voicing(cond: Conditioning) -> Conditioning {
    let frames = cond.frames();
    cond.with_voiced((0..frames).map(|f| (f / 3) % 2 == 0).collect()).expect("one flag per frame")
}

/// The rows `[first, first + frames)` of `cond` as a conditioning of its own.
fn rows(cond: &Conditioning, first: usize, frames: usize) -> Conditioning {
    let w = cond.width();
    Conditioning::new(frames, w, cond.data()[first * w..(first + frames) * w].to_vec())
        .expect("rows of a valid conditioning")
}

/// Kernel 2 against the reference: every slot of `gpu` runs, each from its
/// own place in the pool `cond`; the streams in `checked` are compared
/// (one of them shorter than the run, so it leaves midway), over two
/// launches of `steps / 2` (state carried between launches), with one more
/// stream joining for the second launch only.
pub fn multi_parity(
    gpu: &mut MultiStream,
    voice: &Voice,
    pool: &Conditioning,
    steps: usize,
    checked: &[usize],
) -> Result<Parity, GpuError> {
    let hop = voice.config().hop();
    let slots = gpu.slots();
    let frames_per = steps.div_ceil(hop);
    if pool.frames() < frames_per + slots {
        return Err(GpuError::Shape {
            what: "conditioning pool frames",
            expected: frames_per + slots,
            got: pool.frames(),
        });
    }
    let half = steps / 2;
    // Slot k starts at pool row k; the last checked slot stops early and
    // slot `joiner` joins at the second launch.
    let short = checked.last().copied();
    let joiner = (0..slots).rev().find(|s| !checked.contains(s));
    let len = |slot: usize| if Some(slot) == short { half + half / 2 } else { steps };
    let starts: Vec<StreamStart> = (0..slots)
        .filter(|&s| Some(s) != joiner)
        .map(|s| StreamStart { slot: s, cond_frame: s, samples: len(s), seed: s as u64, lead: 0 })
        .collect();
    gpu.start(&starts)?;
    let mode = GpuSampling::new(Sampling::Mode)?;
    // Free-running mode sampling, two launches.
    let a = gpu.advance(half, mode, None, false)?;
    if let Some(j) = joiner {
        // It joins with a lead of a quarter of its samples (fed and returned as silence).
        let n = steps - half;
        gpu.start(&[StreamStart { slot: j, cond_frame: j, samples: n, seed: 7, lead: n / 4 }])?;
    }
    let b = gpu.advance(steps - half, mode, None, false)?;
    let free = |slot: usize| -> Vec<i32> {
        let mut v = a.samples[slot * half..(slot + 1) * half].to_vec();
        v.extend_from_slice(&b.samples[slot * (steps - half)..(slot + 1) * (steps - half)]);
        v
    };
    let mut total = Parity::default();
    for &slot in checked {
        let n = len(slot);
        let (ref_samples, ref_probs) = reference(voice, &rows(pool, slot, frames_per), n)?;
        let got = free(slot);
        let unwritten = got[..n].iter().filter(|&&c| c < 0).count();
        let extra = got[n..].iter().filter(|&&c| c >= 0).count();
        if unwritten > 0 || extra > 0 {
            return Err(GpuError::Unwritten {
                what: "wavenet_multi samples (unwritten while live, or written after the stream ended)",
                count: unwritten + extra,
            });
        }
        let mism = got[..n].iter().zip(&ref_samples).filter(|(g, r)| **g != **r as i32).count();
        total.merge(&Parity { steps: n, mode_mismatches: mism, ..Default::default() });
        // Teacher-forced distributions: a fresh start, the reference's samples fed back.
        let mut forced = vec![0u8; slots * steps];
        forced[slot * steps..slot * steps + n].copy_from_slice(&ref_samples);
        // Under voiced-only temperature (the pool's own voicing; every frame
        // voiced without a mask), so that each step's draw can be replayed
        // from the kernel's probabilities at its frame's temperature.
        const DRAW_SEED: u64 = 5;
        gpu.start(&[StreamStart { slot, cond_frame: slot, samples: n, seed: DRAW_SEED, lead: 0 }])?;
        let vs = GpuSampling::new(Sampling::VoicedTemperature(PARITY_TEMPERATURE))?;
        let tf = gpu.advance(steps, vs, Some(&forced), true)?;
        let p = tf.probs.expect("asked for");
        let p = &p[slot * steps * A..(slot * steps + n) * A];
        total.max_prob_diff = total.max_prob_diff.max(max_diff(p, &ref_probs));
        let mut rng = Rng::new(DRAW_SEED);
        let drawn = &tf.samples[slot * steps..slot * steps + n];
        let draw_mismatches = (drawn.iter().zip(p.chunks_exact(A)).enumerate())
            .filter(|(t, (&y, p))| {
                let inv_tau = vs.inv_tau_for(pool.voiced(slot + t / hop));
                DrawRule::InverseCdf.draw_at((*p).try_into().expect("A classes"), &mut rng, inv_tau) != y as usize
            })
            .count();
        total.merge(&Parity { draw_steps: n, draw_mismatches, ..Default::default() });
    }
    if let Some(j) = joiner {
        // The joining stream: compare its samples with its own reference, led in the same way.
        let n = steps - half;
        let ref_samples = reference_with_lead(voice, &rows(pool, j, n.div_ceil(hop)), n, n / 4)?;
        let got = &b.samples[j * n..(j + 1) * n];
        let mism = got.iter().zip(&ref_samples).filter(|(g, r)| **g != **r as i32).count();
        let lead_not_silent = got[..n / 4].iter().filter(|&&c| c != SILENCE as i32).count();
        total.merge(&Parity { lead_steps: n, lead_mismatches: mism, lead_not_silent, ..Default::default() });
    }
    Ok(total)
}
