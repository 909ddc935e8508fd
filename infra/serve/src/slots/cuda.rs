//! [`CudaSlots`]: `dv-gpu`'s kernel 2 (the multi-stream kernel, the
//! fastest plan for the voice's size and the device) as the scheduler's
//! backend. Each slot reads its conditioning from its own window of the
//! device pool ([`MultiStream::with_windows`]), refilled from the slot's
//! sentence before every launch: one copy of every busy slot's next frames,
//! one of their offsets, then a launch over the blocks up to the last busy
//! slot ([`MultiStream::advance_first`]; the scheduler fills the lowest free
//! slots first), so a launch costs what the busy slots cost.
//!
//! The voice is checked first as `dv bench gpu-streams` checks a plan:
//! two blocks of slots against the CPU reference with the voice's weights
//! rounded to bfloat16 (per-step distributions within 1e-3); a voice that
//! fails is refused.

use std::sync::Arc;

use dv_gpu::parity::{bf16_rounded, multi_parity};
use dv_gpu::{GpuDevice, GpuSampling, MultiPlan, MultiStream, StreamStart, Weights};
use dv_synth::random::random_conditioning;
use dv_synth::{Conditioning, Sampling};
use dv_voice::Voice;

use super::backend::{MultiBackend, Prepare, SlotError, SlotSentence};

/// The bound on the parity check's per-step distributions (bfloat16
/// weights; `dv bench gpu-streams` uses the same).
pub const PARITY_BOUND: f64 = 1e-3;

struct Busy {
    sentence: Arc<SlotSentence>,
    pos: usize,
}

/// Kernel 2 on GPU 0 with conditioning windows.
pub struct CudaSlots {
    gpu: MultiStream,
    hop: usize,
    width: usize,
    window: usize,
    steps: usize,
    max_samples: usize,
    slots: Vec<Option<Busy>>,
    staging: Vec<f32>,
    first: Vec<usize>,
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
        let gpu = MultiStream::with_windows(dev, &w, plan, slots, steps, max_samples.div_ceil(hop))?;
        let n = gpu.slots();
        let window = gpu.window_frames().unwrap_or(0);
        Ok(Self {
            hop,
            width: w.sizes.conditioning_width(),
            window,
            steps,
            max_samples,
            slots: (0..n).map(|_| None).collect(),
            staging: Vec::new(),
            first: Vec::new(),
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

    fn advance(&mut self, steps: usize, out: &mut [i32]) -> Result<(), SlotError> {
        let n = self.slots.len();
        if steps == 0 || steps > self.steps || out.len() != n * steps {
            return Err(SlotError::Slot {
                slot: 0,
                reason: format!("{steps} steps (at most {}) into {} outputs", self.steps, out.len()),
            });
        }
        // Windows for slots 0 ..= the last busy one: the scheduler fills the lowest free slots first.
        let used = self.slots.iter().rposition(Option::is_some).map_or(0, |k| k + 1);
        if used == 0 {
            out.fill(-1);
            return Ok(());
        }
        let (wf, width) = (self.window, self.width);
        self.staging.clear();
        self.staging.resize(used * wf * width, 0.0);
        self.first.clear();
        for (k, slot) in self.slots[..used].iter().enumerate() {
            let Some(b) = slot else {
                self.first.push(0);
                continue;
            };
            let f0 = b.pos / self.hop;
            let frames = b.sentence.cond.frames();
            let take = wf.min(frames.saturating_sub(f0));
            let src = &b.sentence.cond.data()[f0 * width..(f0 + take) * width];
            self.staging[k * wf * width..k * wf * width + src.len()].copy_from_slice(src);
            self.first.push(f0);
        }
        self.gpu.set_windows(&self.staging, &self.first)?;
        // Only the blocks up to the last busy slot run.
        let run = self.gpu.advance_first(used, steps, self.sampling)?;
        out.copy_from_slice(&run.samples);
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
}
