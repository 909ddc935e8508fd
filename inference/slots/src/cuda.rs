//! [`CudaSlots`]: `dv-gpu`'s kernel 2 (the multi-stream kernel, its slots
//! spread over every multiprocessor on Hopper for r = 64, otherwise the
//! fastest plan: `MultiPlan::for_streams`) as the scheduler's
//! backend, through [`dv_gpu::Pipelined`]: each slot reads its conditioning
//! from its own window of the device pool, and nothing a launch needs from
//! the host is serialized with the kernel before it. While launch k runs,
//! [`MultiBackend::submit`] fills launch k + 1's windows (every busy slot's
//! next frames, by the slot's predicted position: a launch advances a slot
//! by `min(steps, left)`) into page-locked memory on a few threads
//! ([`fill_windows`]), a copy stream uploads them, and the launch is queued
//! behind launch k and that upload; starts and stops are queued on the
//! compute stream between the two, so they take effect at the boundary;
//! [`MultiBackend::collect`] waits for launch k's codes (copied back
//! asynchronously). Each launch covers the blocks up to the last busy slot
//! (the scheduler fills the lowest free slots first), so a launch costs
//! what the busy slots cost.
//!
//! The conditioning network runs on the GPU too ([`GpuConditioning`]:
//! thousands of streams need more of it than the host's cores give): each
//! sentence's QRNN output stays in a device arena, and each launch's windows
//! are projected from it on the device
//! ([`dv_gpu::Pipelined::submit_projected`]), so no conditioning rows are
//! staged or uploaded per launch. It is checked at load against the voice's
//! golden example (max |Δ| ≤ 1e-3, as `dv_speak`'s golden check); a voice
//! that fails it, or `DV_SERVE_CPU_CONDITIONING=1`, runs the network on the
//! CPU and stages the windows as above.
//!
//! The voice is checked first as the example `gpu_bench gpu-streams` checks a plan:
//! two blocks of slots against the CPU reference with the voice's weights
//! rounded to bfloat16 (per-step distributions within 1e-3); a voice that
//! fails is refused.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use dv_gpu::parity::{bf16_rounded, multi_parity, with_parity_voicing};
use dv_gpu::{
    CondLayout, GpuConditioner, GpuDevice, GpuSampling, MultiPlan, MultiStream, Pipelined, Projector, StreamStart,
    Weights,
};
use dv_synth::random::random_conditioning;
use dv_synth::{Conditioning, Sampling};
use dv_voice::Voice;

use crate::backend::{Condition, LaunchTimes, MultiBackend, Prepare, SlotCond, SlotError, SlotSentence};
use crate::condition::GpuConditioning;

/// The bound on the parity check's per-step distributions (bfloat16
/// weights; the example `gpu_bench gpu-streams` uses the same).
pub const PARITY_BOUND: f64 = 1e-3;

/// The bound on the GPU conditioning network's golden check (max |Δ|, as
/// `dv_speak`'s check of the CPU's).
pub const CONDITIONING_BOUND: f64 = 1e-3;

/// Frames of one conditioning batch, and its sentences.
const BATCH_FRAMES: usize = 1 << 16;
const BATCH_SENTENCES: usize = 1024;

/// The share of the device memory free at load (before the pipeline's
/// buffers) that the arena of conditioning rows may take.
const ARENA_SHARE: f64 = 0.5;

/// The GPU conditioning network of `voice`, checked against its golden
/// example, and the projection for the pipeline: room for every slot's
/// sentence and the next one at `max_frames`, or half the free memory.
fn gpu_conditioning(
    voice: &Voice,
    dev: Arc<GpuDevice>,
    w: &Weights,
    plan: MultiPlan,
    slots: usize,
    max_frames: usize,
) -> Result<(GpuConditioning, Projector, f64, usize), SlotError> {
    let layout = CondLayout::new(voice, &plan, w)?;
    let golden = voice.golden().ok_or_else(|| {
        SlotError::Gpu(dv_gpu::GpuError::Unsupported { what: "a voice without a golden example to check it on".into() })
    })?;
    let features = golden.features.data();
    let expected = MultiStream::pool_rows(&plan, w, golden.conditioning.data());
    let per_frame = 4 * layout.u_width;
    let room = (dev.free_memory()? as f64 * ARENA_SHARE) as usize / per_frame;
    let golden_frames = features.len() / layout.input_dim.max(1);
    let frames = (2 * slots * max_frames).min(room).max(golden_frames);
    let mut net = GpuConditioner::new(dev, &layout, BATCH_FRAMES, BATCH_SENTENCES, frames)?;
    net.exclusive_of(plan.smem_bytes)?;
    let diff = net.check(features, &expected)?;
    if diff > CONDITIONING_BOUND {
        return Err(SlotError::Gpu(dv_gpu::GpuError::Unsupported {
            what: format!(
                "the GPU conditioning network is off the golden example by {diff:.2e} (bound {CONDITIONING_BOUND:.0e})"
            ),
        }));
    }
    let projector = net.projector();
    let service = GpuConditioning::spawn(net)
        .map_err(|e| SlotError::Slot { slot: 0, reason: format!("starting the conditioning thread: {e}") })?;
    Ok((service, projector, diff, frames))
}

struct Busy {
    sentence: Arc<SlotSentence>,
    pos: usize,
}

/// Fills a launch's windows: for each slot `k` of `sources` (`None`:
/// idle), `stage[k]` (`[window, width]`) gets frames `pos / hop ..` of its
/// rows (`[F, width]`, as many as there are, up to `window`), and
/// `first[k] = pos / hop`; an idle slot's row 0 is zeroed (the kernel reads
/// it) and its first frame is 0. Spread over `threads` threads (the copy is
/// memory-bound: about 10 kB per frame, 2.6 MB per stream per second of
/// audio with the shipped voice). Returns the frames copied.
pub fn fill_windows(
    sources: &[Option<(&[f32], usize)>],
    hop: usize,
    window: usize,
    width: usize,
    stage: &mut [f32],
    first: &mut Vec<usize>,
    threads: usize,
) -> usize {
    let per = window * width;
    first.clear();
    first.extend(sources.iter().map(|s| s.map_or(0, |(_, pos)| pos / hop.max(1))));
    let stage = &mut stage[..sources.len() * per];
    let fill = |srcs: &[Option<(&[f32], usize)>], firsts: &[usize], dst: &mut [f32]| -> usize {
        let mut frames = 0;
        for ((src, &f0), win) in srcs.iter().zip(firsts).zip(dst.chunks_mut(per)) {
            match src {
                Some((rows, _)) => {
                    let avail = (rows.len() / width).saturating_sub(f0);
                    let take = window.min(avail);
                    win[..take * width].copy_from_slice(&rows[f0 * width..(f0 + take) * width]);
                    frames += take;
                }
                None => win[..width].fill(0.0),
            }
        }
        frames
    };
    let threads = threads.clamp(1, sources.len().max(1));
    if threads == 1 {
        return fill(sources, first, stage);
    }
    let chunk = sources.len().div_ceil(threads);
    std::thread::scope(|sc| {
        let jobs: Vec<_> = sources
            .chunks(chunk)
            .zip(first.chunks(chunk))
            .zip(stage.chunks_mut(chunk * per))
            .map(|((srcs, firsts), dst)| sc.spawn(move || fill(srcs, firsts, dst)))
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap_or(0)).sum()
    })
}

/// Threads filling windows: the cores, at most 8 (the copy is
/// memory-bound; the rest run the conditioning network).
fn fill_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8)
}

/// Kernel 2 on GPU 0 with double-buffered conditioning windows.
pub struct CudaSlots {
    gpu: Pipelined,
    hop: usize,
    width: usize,
    window: usize,
    steps: usize,
    max_samples: usize,
    /// Each slot's sentence and the position its next launch starts at.
    slots: Vec<Option<Busy>>,
    first: Vec<usize>,
    /// Per launch in flight: whether it ran on the GPU (no busy slot: no
    /// launch), its steps, its host staging seconds, and its sentences
    /// (their arena rows stay allocated until the launch is collected).
    flights: VecDeque<(bool, usize, f64, Vec<Arc<SlotSentence>>)>,
    /// The GPU conditioning network and its projection (`None`: the CPU's).
    conditioning: Option<(Arc<GpuConditioning>, Projector)>,
    sources: Vec<(Option<(usize, usize)>, usize)>,
    note: String,
    threads: usize,
    sampling: GpuSampling,
    weights: Arc<Weights>,
    plan: MultiPlan,
}

impl CudaSlots {
    /// `slots` (rounded up to whole blocks) for `voice` on GPU `device`,
    /// launches of at most `steps` samples, sentences of at most
    /// `max_samples`. Runs the parity check first.
    pub fn new(
        voice: &Voice,
        device: usize,
        slots: usize,
        steps: usize,
        max_samples: usize,
    ) -> Result<Self, SlotError> {
        let dev = Arc::new(GpuDevice::new(device)?);
        let w = Weights::from_voice(voice)?;
        let plan = MultiPlan::for_streams(
            &w.sizes,
            dev.compute_capability(),
            dev.shared_memory_limit(),
            slots,
            dev.multiprocessors(),
        )?;
        let hop = w.sizes.hop;
        // The conditioning network first: its arena takes half the device memory free before the pipeline.
        let (conditioning, note) = if std::env::var_os("DV_SERVE_CPU_CONDITIONING").is_some_and(|v| v != "0") {
            (None, "conditioning network on the CPU (DV_SERVE_CPU_CONDITIONING)".to_string())
        } else {
            match gpu_conditioning(voice, dev.clone(), &w, plan, slots, max_samples.div_ceil(hop)) {
                Ok((c, p, diff, frames)) => (
                    Some((Arc::new(c), p)),
                    format!("conditioning network on the GPU (golden max |Δ| {diff:.1e}, arena of {frames} frames)"),
                ),
                Err(e) => (None, format!("conditioning network on the CPU: {e}")),
            }
        };
        // Parity: two blocks of slots, every one live, four checked (one leaves midway, one joins).
        let pstreams = 2 * plan.streams_per_block;
        let parity_steps: usize = 512;
        let pool =
            with_parity_voicing(random_conditioning(voice.config(), parity_steps.div_ceil(hop) + pstreams + 1, 5));
        let mut check = MultiStream::new(dev.clone(), &w, plan, pstreams, &pool)?;
        let par = multi_parity(
            &mut check,
            &bf16_rounded(voice)?,
            &pool,
            parity_steps,
            &[0, 1, plan.streams_per_block + 3, pstreams - 2],
        )?;
        drop(check);
        if par.lead_not_silent > 0 {
            return Err(SlotError::Gpu(dv_gpu::GpuError::Unsupported {
                what: format!(
                    "this voice on {} with {}: {} samples of a stream's lead were not silence",
                    dev.name(),
                    plan.entry(),
                    par.lead_not_silent
                ),
            }));
        }
        if !par.draws_ok() {
            return Err(SlotError::Gpu(dv_gpu::GpuError::Unsupported {
                what: format!(
                    "this voice on {} with {}: {} of {} replayed voiced-only temperature draws differ from the kernel's",
                    dev.name(),
                    plan.entry(),
                    par.draw_mismatches,
                    par.draw_steps
                ),
            }));
        }
        if par.max_prob_diff > PARITY_BOUND || par.max_prob_diff.is_nan() {
            return Err(SlotError::Gpu(dv_gpu::GpuError::Unsupported {
                what: format!(
                    "this voice on {} with {}: per-step distributions differ from the CPU reference by {:.2e} (bound {PARITY_BOUND:.0e})",
                    dev.name(),
                    plan.entry(),
                    par.max_prob_diff
                ),
            }));
        }
        let gpu = Pipelined::new(dev, &w, plan, slots, steps, max_samples.div_ceil(hop))?;
        let n = gpu.slots();
        let window = gpu.window_frames();
        Ok(Self {
            hop,
            width: w.sizes.conditioning_width(),
            window,
            steps,
            max_samples,
            slots: (0..n).map(|_| None).collect(),
            first: Vec::new(),
            flights: VecDeque::new(),
            conditioning,
            sources: Vec::new(),
            note,
            threads: fill_threads(),
            sampling: GpuSampling::new(dv_speak::DEFAULT_SAMPLING)?,
            weights: Arc::new(w),
            plan,
            gpu,
        })
    }

    /// Samples with `sampling` (default [`dv_speak::DEFAULT_SAMPLING`]):
    /// direct, mode, temperature or voiced-only temperature.
    pub fn with_sampling(mut self, sampling: Sampling) -> Result<Self, SlotError> {
        self.sampling = GpuSampling::new(sampling)?;
        Ok(self)
    }

    /// Stages each used slot's window voicing for the next launch, when the
    /// sampling reads it: row k of slot s is frame `pos / hop + k` of its
    /// sentence (idle slots: voiced, unread).
    fn stage_voicing(&mut self, used: usize) -> Result<(), SlotError> {
        if !self.sampling.reads_voicing() {
            return Ok(());
        }
        let (hop, window) = (self.hop, self.window);
        let stage = self.gpu.stage_voiced()?;
        for (slot, win) in self.slots[..used].iter().zip(stage.chunks_mut(window)) {
            match slot {
                Some(b) => {
                    let first = b.pos / hop;
                    for (k, v) in win.iter_mut().enumerate() {
                        *v = u8::from(b.sentence.voiced(first + k));
                    }
                }
                None => win.fill(1),
            }
        }
        Ok(())
    }

    /// The kernel's name and streams per block, for the log.
    pub fn describe(&self) -> String {
        format!("{} ({} streams per block); {}", self.plan.entry(), self.plan.streams_per_block, self.note)
    }
}

impl MultiBackend for CudaSlots {
    fn slots(&self) -> usize {
        self.slots.len()
    }

    fn feeds_lead(&self) -> bool {
        // The kernel feeds and writes silence for a stream's first `lead` samples (StreamStart::lead).
        true
    }

    fn prepare(&self) -> Prepare {
        let (w, plan) = (self.weights.clone(), self.plan);
        Arc::new(move |c: Conditioning| {
            let rows = MultiStream::pool_rows(&plan, &w, c.data());
            Ok(Conditioning::new(c.frames(), c.width(), rows)?)
        })
    }

    fn condition(&self) -> Option<Condition> {
        let (c, _) = self.conditioning.as_ref()?;
        let c = c.clone();
        Some(Arc::new(move |features: &[f32]| c.condition(features)))
    }

    fn condition_stats(&self) -> Option<Arc<crate::backend::CondStats>> {
        self.conditioning.as_ref().map(|(c, _)| c.stats().clone())
    }

    fn max_samples(&self) -> usize {
        self.max_samples
    }

    fn start(&mut self, starts: &[(usize, Arc<SlotSentence>)]) -> Result<(), SlotError> {
        let mut gpu_starts = Vec::with_capacity(starts.len());
        for (slot, s) in starts {
            if *slot >= self.slots.len() {
                return Err(SlotError::Slot { slot: *slot, reason: format!("only {} slots", self.slots.len()) });
            }
            let fits = match &s.cond {
                SlotCond::Rows(c) => self.conditioning.is_none() && c.width() == self.width,
                SlotCond::Device(_) => self.conditioning.is_some(),
            };
            if !fits || s.samples > s.cond.frames() * self.hop || s.samples > self.max_samples {
                return Err(SlotError::Slot {
                    slot: *slot,
                    reason: format!(
                        "{} samples of {} frames{} (a slot takes {} samples of width {}{})",
                        s.samples,
                        s.cond.frames(),
                        s.cond.rows().map_or(" on the GPU".to_string(), |c| format!(" × {}", c.width())),
                        self.max_samples,
                        self.width,
                        if self.conditioning.is_some() { ", conditioned on the GPU" } else { ", rows from the host" }
                    ),
                });
            }
            gpu_starts.push(StreamStart { slot: *slot, cond_frame: 0, samples: s.samples, seed: s.seed, lead: s.lead });
        }
        self.gpu.start(&gpu_starts)?;
        for (slot, s) in starts {
            self.slots[*slot] = Some(Busy { sentence: s.clone(), pos: 0 });
        }
        Ok(())
    }

    fn stop(&mut self, slots: &[usize]) -> Result<(), SlotError> {
        let stops: Vec<StreamStart> = slots
            .iter()
            .filter(|&&s| s < self.slots.len())
            .map(|&slot| StreamStart { slot, cond_frame: 0, samples: 0, seed: 0, lead: 0 })
            .collect();
        self.gpu.start(&stops)?;
        for &s in slots {
            if let Some(p) = self.slots.get_mut(s) {
                *p = None;
            }
        }
        Ok(())
    }

    fn depth(&self) -> usize {
        Pipelined::DEPTH
    }

    fn submit(&mut self, steps: usize) -> Result<(), SlotError> {
        if steps == 0 || steps > self.steps {
            return Err(SlotError::Slot { slot: 0, reason: format!("{steps} steps (at most {})", self.steps) });
        }
        // Windows for slots 0 ..= the last busy one: the scheduler fills the lowest free slots first.
        let used = self.slots.iter().rposition(Option::is_some).map_or(0, |k| k + 1);
        if used == 0 {
            self.flights.push_back((false, steps, 0.0, Vec::new()));
            return Ok(());
        }
        let t = Instant::now();
        let held: Vec<Arc<SlotSentence>> = self.slots.iter().flatten().map(|b| b.sentence.clone()).collect();
        self.stage_voicing(used)?;
        if let Some((_, proj)) = &self.conditioning {
            let hop = self.hop;
            self.sources.clear();
            for slot in &self.slots[..used] {
                self.sources.push(match slot {
                    Some(b) => match &b.sentence.cond {
                        SlotCond::Device(d) => (Some((d.span.at(), d.span.frames())), b.pos / hop),
                        SlotCond::Rows(_) => {
                            return Err(SlotError::Slot {
                                slot: 0,
                                reason: "host rows on a GPU-conditioned slot".into(),
                            })
                        }
                    },
                    None => (None, 0),
                });
            }
            self.gpu.submit_projected(proj, &self.sources, steps, self.sampling)?;
            self.flights.push_back((true, steps, t.elapsed().as_secs_f64(), held));
        } else {
            let (hop, window, width, threads) = (self.hop, self.window, self.width, self.threads);
            let sources: Vec<Option<(&[f32], usize)>> = self.slots[..used]
                .iter()
                .map(|s| s.as_ref().and_then(|b| b.sentence.cond.rows().map(|c| (c.data(), b.pos))))
                .collect();
            let stage = self.gpu.stage()?;
            fill_windows(&sources, hop, window, width, stage, &mut self.first, threads);
            drop(sources);
            let stage_s = t.elapsed().as_secs_f64();
            self.gpu.submit(used, &self.first, steps, self.sampling)?;
            self.flights.push_back((true, steps, stage_s, held));
        }
        // Where the next launch starts: every busy slot moved by min(steps, left).
        for slot in self.slots.iter_mut() {
            if let Some(b) = slot {
                b.pos = (b.pos + steps).min(b.sentence.samples);
                if b.pos == b.sentence.samples {
                    *slot = None;
                }
            }
        }
        Ok(())
    }

    fn collect(&mut self, out: &mut [i32]) -> Result<LaunchTimes, SlotError> {
        let Some((launched, steps, stage_s, _held)) = self.flights.pop_front() else {
            return Err(SlotError::Slot { slot: 0, reason: "no launch in flight".into() });
        };
        if out.len() != self.slots.len() * steps {
            return Err(SlotError::Slot { slot: 0, reason: format!("{} outputs for {steps} steps", out.len()) });
        }
        if !launched {
            out.fill(-1);
            return Ok(LaunchTimes { stage_s, ..LaunchTimes::default() });
        }
        let t = self.gpu.collect(out)?;
        Ok(LaunchTimes {
            stage_s,
            upload_s: f64::from(t.upload_ms) / 1e3,
            kernel_s: f64::from(t.kernel_ms) / 1e3,
            download_s: f64::from(t.download_ms) / 1e3,
            gap_s: t.gap_ms.map_or(0.0, |g| f64::from(g) / 1e3),
        })
    }
}
