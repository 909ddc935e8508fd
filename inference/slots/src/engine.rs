//! [`SlotEngine`]: a voice's [`Scheduler`] with the conditioning network its
//! requests run on the CPU, and the making of a [`SlotSentence`] from a
//! planned [`Sentence`] by [`Speaker::render`]'s rules: its length (frames
//! × hop), its seed ([`dv_speak::sentence_seed`]) and its lead fed as
//! silence ([`dv_speak::lead_samples`], where the backend
//! [`MultiBackend::feeds_lead`](crate::MultiBackend::feeds_lead)).

use std::sync::Arc;

use dv_speak::{lead_samples, sentence_seed, Sentence, Speaker};
use dv_synth::ConditioningNetwork;

use crate::backend::{SlotCond, SlotError, SlotSentence};
use crate::scheduler::Scheduler;

/// A voice's scheduler and the conditioning network its requests run on
/// the CPU (when the backend runs none of its own).
pub struct SlotEngine {
    scheduler: Scheduler,
    network: ConditioningNetwork,
}

impl SlotEngine {
    pub fn new(scheduler: Scheduler, network: ConditioningNetwork) -> Self {
        Self { scheduler, network }
    }

    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// Whether sentences are conditioned by the backend's own network
    /// ([`SlotEngine::prepare_on_backend`]; the GPU's, whose output holds
    /// arena frames) rather than on the CPU ([`SlotEngine::prepare`]).
    pub fn conditions_on_backend(&self) -> bool {
        self.scheduler.condition().is_some()
    }

    /// `sentence` made ready for a slot on the CPU: the conditioning
    /// network, then [`SlotEngine::finish`]. Blocking (seconds for a long
    /// sentence): call it where blocking is allowed.
    pub fn prepare(&self, speaker: &Speaker, sentence: &Sentence, seed: u64) -> Result<SlotSentence, SlotError> {
        let cond = self.network.forward(sentence.conditioning_frames())?;
        self.finish(speaker, sentence, seed, SlotCond::Rows(cond))
    }

    /// [`SlotEngine::prepare`] with the backend's own conditioning network
    /// (the GPU's): queued there and awaited, holding no thread.
    pub async fn prepare_on_backend(
        &self,
        speaker: &Speaker,
        sentence: &Sentence,
        seed: u64,
    ) -> Result<SlotSentence, SlotError> {
        let condition = self.scheduler.condition().ok_or(SlotError::NoConditioning)?;
        let answer = condition(sentence.conditioning_frames())?;
        let cond = answer.await.map_err(|_| SlotError::ConditioningStopped)?.map_err(SlotError::Conditioning)?;
        self.finish(speaker, sentence, seed, cond)
    }

    /// The sentence's length, lead and seed around its conditioning, and
    /// host rows converted for the backend ([`crate::MultiBackend::prepare`]).
    /// A sentence longer than a slot takes is [`SlotError::TooLong`].
    fn finish(
        &self,
        speaker: &Speaker,
        sentence: &Sentence,
        seed: u64,
        cond: SlotCond,
    ) -> Result<SlotSentence, SlotError> {
        let s = &self.scheduler;
        let n = cond.frames() * speaker.hop();
        let rate = speaker.sample_rate();
        if n > s.max_samples() {
            return Err(SlotError::TooLong {
                sentence: sentence.index() + 1,
                seconds: n as f64 / rate as f64,
                max_s: s.max_samples() as f64 / rate as f64,
            });
        }
        let lead = if s.feeds_lead() { lead_samples(sentence, rate, n) } else { 0 };
        let voiced: Arc<[bool]> = sentence.voiced().into();
        let cond = match cond {
            SlotCond::Rows(rows) => SlotCond::Rows((s.prepare())(rows)?.with_voiced(voiced.to_vec())?),
            device => device,
        };
        Ok(SlotSentence { cond, samples: n, seed: sentence_seed(seed, sentence.index()), lead, voiced })
    }
}
