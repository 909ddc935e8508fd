//! [`CpuSlots`]: `dv-synth`'s sampler driven slot by slot on one thread.
//! The scheduler's CPU backend: what CI tests it with, and `--device
//! cpu-slots`. Each slot keeps its own [`Scratch`] and generator, so its
//! samples are exactly those of `Speaker::render` on the CPU with the same
//! kernel and options (the sampler's output does not depend on how a
//! sentence is cut into blocks).

use std::sync::Arc;

use dv_synth::{Kernel, Rng, Sampler, SamplerOptions, Sampling, Scratch, SILENCE};
use dv_voice::Voice;

use super::backend::{MultiBackend, Prepare, SlotError, SlotSentence};

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
        })
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

    fn advance(&mut self, steps: usize, out: &mut [i32]) -> Result<(), SlotError> {
        out.fill(-1);
        if out.len() != self.slots.len() * steps {
            return Err(SlotError::Slot { slot: 0, reason: format!("{} outputs for {steps} steps", out.len()) });
        }
        self.codes.resize(steps, 0);
        for (k, place) in self.slots.iter_mut().enumerate() {
            let Some(b) = place else { continue };
            let s = &b.sentence;
            let n = steps.min(s.samples - b.pos);
            let codes = &mut self.codes[..n];
            // The lead first (fed as silence), then sampled.
            let forced = s.lead.saturating_sub(b.pos).min(n);
            codes[..forced].fill(SILENCE);
            self.sampler.force(&mut b.scratch, &s.cond, &codes[..forced])?;
            self.sampler.generate(&mut b.scratch, &s.cond, Sampling::Direct, &mut b.rng, &mut codes[forced..])?;
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
        Ok(())
    }
}
