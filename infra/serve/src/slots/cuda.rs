//! [`CudaSlots`]: `dv-gpu`'s kernel 2 (the multi-stream kernel, the
//! fastest plan for the voice's size and the device) as the scheduler's
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
//! The voice is checked first as `dv bench gpu-streams` checks a plan:
//! two blocks of slots against the CPU reference with the voice's weights
//! rounded to bfloat16 (per-step distributions within 1e-3); a voice that
//! fails is refused.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use dv_gpu::parity::{bf16_rounded, multi_parity};
use dv_gpu::{GpuDevice, GpuSampling, MultiPlan, MultiStream, Pipelined, StreamStart, Weights};
use dv_synth::random::random_conditioning;
use dv_synth::{Conditioning, Sampling};
use dv_voice::Voice;

use super::backend::{LaunchTimes, MultiBackend, Prepare, SlotError, SlotSentence};

/// The bound on the parity check's per-step distributions (bfloat16
/// weights; `dv bench gpu-streams` uses the same).
pub const PARITY_BOUND: f64 = 1e-3;

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
    /// launch), its steps, and its host staging seconds.
    flights: VecDeque<(bool, usize, f64)>,
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
        let plan = MultiPlan::fastest(&w.sizes, dev.compute_capability(), dev.shared_memory_limit())?;
        let hop = w.sizes.hop;
        // Parity: two blocks of slots, every one live, four checked (one leaves midway, one joins).
        let pstreams = 2 * plan.streams_per_block;
        let parity_steps: usize = 512;
        let pool = random_conditioning(voice.config(), parity_steps.div_ceil(hop) + pstreams + 1, 5);
        let mut check = MultiStream::new(dev.clone(), &w, plan, pstreams, &pool)?;
        let par = multi_parity(
            &mut check,
            &bf16_rounded(voice)?,
            &pool,
            parity_steps,
            &[0, 1, plan.streams_per_block + 3, pstreams - 2],
        )?;
        drop(check);
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
            threads: fill_threads(),
            sampling: GpuSampling::new(Sampling::Direct)?,
            weights: Arc::new(w),
            plan,
            gpu,
        })
    }

    /// The kernel's name and streams per block, for the log.
    pub fn describe(&self) -> String {
        format!("{} ({} streams per block)", self.plan.entry(), self.plan.streams_per_block)
    }
}

impl MultiBackend for CudaSlots {
    fn slots(&self) -> usize {
        self.slots.len()
    }

    fn feeds_lead(&self) -> bool {
        false
    }

    fn prepare(&self) -> Prepare {
        let (w, plan) = (self.weights.clone(), self.plan);
        Arc::new(move |c: Conditioning| {
            let rows = MultiStream::pool_rows(&plan, &w, c.data());
            Ok(Conditioning::new(c.frames(), c.width(), rows)?)
        })
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
            if s.cond.width() != self.width || s.samples > s.cond.frames() * self.hop || s.samples > self.max_samples {
                return Err(SlotError::Slot {
                    slot: *slot,
                    reason: format!(
                        "{} samples of {} frames × {} (a slot takes {} samples of width {})",
                        s.samples,
                        s.cond.frames(),
                        s.cond.width(),
                        self.max_samples,
                        self.width
                    ),
                });
            }
            gpu_starts.push(StreamStart { slot: *slot, cond_frame: 0, samples: s.samples, seed: s.seed });
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
            .map(|&slot| StreamStart { slot, cond_frame: 0, samples: 0, seed: 0 })
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
            self.flights.push_back((false, steps, 0.0));
            return Ok(());
        }
        let t = Instant::now();
        let (hop, window, width, threads) = (self.hop, self.window, self.width, self.threads);
        let sources: Vec<Option<(&[f32], usize)>> =
            self.slots[..used].iter().map(|s| s.as_ref().map(|b| (b.sentence.cond.data(), b.pos))).collect();
        let stage = self.gpu.stage()?;
        fill_windows(&sources, hop, window, width, stage, &mut self.first, threads);
        drop(sources);
        let stage_s = t.elapsed().as_secs_f64();
        self.gpu.submit(used, &self.first, steps, self.sampling)?;
        self.flights.push_back((true, steps, stage_s));
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
        let Some((launched, steps, stage_s)) = self.flights.pop_front() else {
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
