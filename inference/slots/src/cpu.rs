//! [`CpuSlots`]: `dv-synth`'s sampler driven slot by slot on one thread.
//! The scheduler's CPU backend: what CI tests it with, and `--device
//! cpu-slots`. Each slot keeps its own [`Scratch`] and generator, so its
//! samples are exactly those of `Speaker::render` on the CPU with the same
//! kernel and options (the sampler's output does not depend on how a
//! sentence is cut into blocks).
//!
//! A launch is sampled when it is submitted and its codes wait in a queue
//! until collected; [`CpuSlots::with_depth`] lets the scheduler keep more
//! than one in flight, as it does on the GPU (what the scheduler's
//! pipelining is tested with).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use dv_synth::{Kernel, Rng, Sampler, SamplerOptions, Sampling, Scratch, SILENCE};
use dv_voice::Voice;

use crate::backend::{LaunchTimes, MultiBackend, Prepare, SlotError, SlotSentence};

struct Busy {
    sentence: Arc<SlotSentence>,
    scratch: Scratch,
    rng: Rng,
    pos: usize,
}

/// `slots` streams of one voice on the CPU sampler (one thread).
pub struct CpuSlots {
    sampler: Sampler,
    slots: Vec<Option<Busy>>,
    /// Scratches of finished sentences, reused.
    spare: Vec<Scratch>,
    codes: Vec<u8>,
    max_samples: usize,
    depth: usize,
    sampling: Sampling,
    /// Submitted launches' codes (`[slots, steps]`) and sampling seconds.
    done: VecDeque<(Vec<i32>, f64)>,
}

impl CpuSlots {
    /// `kernel` and `options` as the speaker's CPU sampler has them
    /// (`Speaker::cpu_sampler`); `threads` is forced to 1.
    pub fn new(
        voice: &Voice,
        kernel: Kernel,
        options: SamplerOptions,
        slots: usize,
        max_samples: usize,
    ) -> Result<Self, SlotError> {
        let sampler = Sampler::new(voice, kernel, SamplerOptions { threads: 1, ..options })?;
        Ok(Self {
            sampler,
            slots: (0..slots.max(1)).map(|_| None).collect(),
            spare: Vec::new(),
            codes: Vec::new(),
            max_samples,
            depth: 1,
            sampling: dv_speak::DEFAULT_SAMPLING,
            done: VecDeque::new(),
        })
    }

    /// Samples with `sampling` (default [`dv_speak::DEFAULT_SAMPLING`]).
    pub fn with_sampling(mut self, sampling: Sampling) -> Result<Self, SlotError> {
        self.sampling = sampling.validate()?;
        Ok(self)
    }

    /// Lets the scheduler keep up to `depth` (≥ 1) launches in flight.
    pub fn with_depth(mut self, depth: usize) -> Self {
        self.depth = depth.max(1);
        self
    }
}

impl MultiBackend for CpuSlots {
    fn slots(&self) -> usize {
        self.slots.len()
    }

    fn feeds_lead(&self) -> bool {
        true
    }

    fn prepare(&self) -> Prepare {
        Arc::new(Ok)
    }

    fn max_samples(&self) -> usize {
        self.max_samples
    }

    fn start(&mut self, starts: &[(usize, Arc<SlotSentence>)]) -> Result<(), SlotError> {
        for (slot, sentence) in starts {
            let n = self.slots.len();
            let Some(place) = self.slots.get_mut(*slot) else {
                return Err(SlotError::Slot { slot: *slot, reason: format!("only {n} slots") });
            };
            if sentence.cond.rows().is_none() {
                return Err(SlotError::Slot {
                    slot: *slot,
                    reason: "conditioning on the GPU given to the CPU sampler".into(),
                });
            }
            let covered = sentence.cond.frames() * self.sampler.hop();
            if sentence.samples > covered || sentence.samples > self.max_samples {
                return Err(SlotError::Slot {
                    slot: *slot,
                    reason: format!(
                        "{} samples: the conditioning covers {covered}, a slot takes {}",
                        sentence.samples, self.max_samples
                    ),
                });
            }
            let mut scratch = match place.take() {
                Some(b) => b.scratch,
                None => self.spare.pop().unwrap_or_else(|| self.sampler.make_scratch()),
            };
            self.sampler.reset(&mut scratch);
            *place = Some(Busy { sentence: sentence.clone(), scratch, rng: Rng::new(sentence.seed), pos: 0 });
        }
        Ok(())
    }

    fn stop(&mut self, slots: &[usize]) -> Result<(), SlotError> {
        for &s in slots {
            if let Some(b) = self.slots.get_mut(s).and_then(Option::take) {
                self.spare.push(b.scratch);
            }
        }
        Ok(())
    }

    fn depth(&self) -> usize {
        self.depth
    }

    fn submit(&mut self, steps: usize) -> Result<(), SlotError> {
        if steps == 0 || self.done.len() >= self.depth {
            return Err(SlotError::Slot {
                slot: 0,
                reason: format!("{steps} steps with {} launches in flight", self.done.len()),
            });
        }
        let t = Instant::now();
        let mut out = vec![-1; self.slots.len() * steps];
        self.codes.resize(steps, 0);
        for (k, place) in self.slots.iter_mut().enumerate() {
            let Some(b) = place else { continue };
            let s = &b.sentence;
            let Some(cond) = s.cond.rows() else { continue };
            let n = steps.min(s.samples - b.pos);
            let codes = &mut self.codes[..n];
            // The lead first (fed as silence), then sampled.
            let forced = s.lead.saturating_sub(b.pos).min(n);
            codes[..forced].fill(SILENCE);
            self.sampler.force(&mut b.scratch, cond, &codes[..forced])?;
            self.sampler.generate(&mut b.scratch, cond, self.sampling, &mut b.rng, &mut codes[forced..])?;
            b.pos += n;
            for (o, &c) in out[k * steps..k * steps + n].iter_mut().zip(codes.iter()) {
                *o = c as i32;
            }
            if b.pos == s.samples {
                if let Some(b) = place.take() {
                    self.spare.push(b.scratch);
                }
            }
        }
        self.done.push_back((out, t.elapsed().as_secs_f64()));
        Ok(())
    }

    fn collect(&mut self, out: &mut [i32]) -> Result<LaunchTimes, SlotError> {
        let Some((codes, kernel_s)) = self.done.pop_front() else {
            return Err(SlotError::Slot { slot: 0, reason: "no launch in flight".into() });
        };
        if out.len() != codes.len() {
            return Err(SlotError::Slot {
                slot: 0,
                reason: format!("{} outputs for {} codes", out.len(), codes.len()),
            });
        }
        out.copy_from_slice(&codes);
        Ok(LaunchTimes { kernel_s, ..LaunchTimes::default() })
    }
}
