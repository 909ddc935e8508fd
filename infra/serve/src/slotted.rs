//! One request on its voice's slot scheduler ([`crate::slots`]): wait for
//! a render permit, plan the text (on a blocking thread), then join the
//! scheduler and feed it sentence by sentence, each sentence's conditioning
//! computed at most one sentence ahead of the one sampling (on a blocking
//! thread, or queued on the backend's own network on the GPU and awaited,
//! the first once the request holds a slot) while the slot's blocks are
//! forwarded to the response. A
//! response that is dropped or stalls past the stall timeout, a cancelled
//! ticket, or a failed backend ends the request and frees its slot.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dv_speak::{sentence_seed, Sentence, Speaker, LEAD_SAMPLED_S, PAUSE};
use dv_synth::ConditioningNetwork;
use tokio::sync::{mpsc, OwnedSemaphorePermit};
use tokio::task::JoinHandle;

use crate::error::ApiError;
use crate::job::{times, Event, Job, Planned, Summary, CHANNEL_BLOCKS};
use crate::pool::Ticket;
use crate::slots::{Scheduler, SlotCond, SlotEvent, SlotSentence, SlotStream};

/// A voice's scheduler and the conditioning network its requests run on
/// the CPU.
pub(crate) struct SlotEngine {
    pub(crate) scheduler: Scheduler,
    pub(crate) network: ConditioningNetwork,
}

/// Sentences prepared ahead of the one sampling.
const LOOKAHEAD: usize = 1;

/// How often a request waiting on its slot checks its cancel token.
const POLL: Duration = Duration::from_millis(50);

/// Sentence `k` of `plan` made ready for a slot on the CPU: conditioning
/// network, length, lead, the backend's layout (on a blocking thread).
fn prepare(engine: &SlotEngine, speaker: &Speaker, sentence: &Sentence, seed: u64) -> Result<SlotSentence, String> {
    let cond = engine.network.forward(sentence.conditioning_frames()).map_err(|e| e.to_string())?;
    finish(engine, speaker, sentence, seed, SlotCond::Rows(cond))
}

/// [`prepare`] with the backend's own conditioning network (the GPU's):
/// queued there and awaited.
async fn prepare_on_backend(
    engine: &SlotEngine,
    speaker: &Speaker,
    sentence: &Sentence,
    seed: u64,
) -> Result<SlotSentence, String> {
    let condition = engine.scheduler.condition().ok_or("the backend runs no conditioning network")?;
    let answer = condition(sentence.conditioning_frames()).map_err(|e| e.to_string())?;
    let cond = answer.await.map_err(|_| "the conditioning thread stopped".to_string())??;
    finish(engine, speaker, sentence, seed, cond)
}

/// The sentence's length, lead and seed around its conditioning.
fn finish(
    engine: &SlotEngine,
    speaker: &Speaker,
    sentence: &Sentence,
    seed: u64,
    cond: SlotCond,
) -> Result<SlotSentence, String> {
    let s = &engine.scheduler;
    let n = cond.frames() * speaker.hop();
    let rate = speaker.sample_rate() as f64;
    if n > s.max_samples() {
        return Err(format!(
            "sentence {} is {:.1} s long; a slot takes at most {:.1} s",
            sentence.index() + 1,
            n as f64 / rate,
            s.max_samples() as f64 / rate
        ));
    }
    // As Speaker::render: the leading pause fed as silence, all but its last LEAD_SAMPLED_S.
    let lead = match sentence.phonemes.first() {
        Some(p) if s.feeds_lead() && p.phoneme == PAUSE => {
            (((p.end_s - LEAD_SAMPLED_S).max(0.0) * rate) as usize).min(n)
        }
        _ => 0,
    };
    let cond = match cond {
        SlotCond::Rows(rows) => SlotCond::Rows((s.prepare())(rows).map_err(|e| e.to_string())?),
        device => device,
    };
    Ok(SlotSentence { cond, samples: n, seed: sentence_seed(seed, sentence.index()), lead })
}

impl Job {
    /// [`Job::start`] on the slot scheduler of `engine`.
    pub(crate) async fn start_slotted(
        self,
        engine: Arc<SlotEngine>,
        ticket: Ticket,
    ) -> Result<(Planned, mpsc::Receiver<Event>), ApiError> {
        let permit = ticket.worker().await?;
        let speaker = self.speaker.clone();
        let (input, speed) = (self.input.clone(), self.speed);
        let plan = tokio::task::spawn_blocking(move || speaker.plan(&input, speed))
            .await
            .map_err(|e| ApiError::internal(format!("planning: {e}")))??;
        let rate = self.speaker.sample_rate();
        let planned = Planned { rate, seed: self.seed, sentences: times(&plan, rate) };
        let (tx, rx) = mpsc::channel(CHANNEL_BLOCKS);
        tokio::spawn(self.drive(engine, ticket, permit, plan, tx));
        Ok((planned, rx))
    }

    async fn drive(
        self,
        engine: Arc<SlotEngine>,
        ticket: Ticket,
        permit: OwnedSemaphorePermit,
        plan: Vec<Sentence>,
        tx: mpsc::Sender<Event>,
    ) {
        let m = self.metrics.clone();
        m.rendering.fetch_add(1, Ordering::Relaxed);
        let stall = self.stall;
        let last = self.run_slotted(&engine, &ticket, Arc::new(plan), &tx).await;
        // The permit and the place are free before the client hears the end.
        m.rendering.fetch_sub(1, Ordering::Relaxed);
        drop(permit);
        drop(ticket);
        if let Some(e) = last {
            let _ = tokio::time::timeout(stall, tx.send(e)).await;
        }
    }

    /// Feeds and forwards; the last event to send (Done or Failed), `None`
    /// when cancelled.
    async fn run_slotted(
        &self,
        engine: &Arc<SlotEngine>,
        ticket: &Ticket,
        plan: Arc<Vec<Sentence>>,
        tx: &mpsc::Sender<Event>,
    ) -> Option<Event> {
        let cancel = &ticket.cancel;
        let (stream, mut events): (SlotStream, _) = match engine.scheduler.join(cancel.clone()) {
            Ok(j) => j,
            Err(e) => return Some(Event::Failed(e.to_string())),
        };
        let t = Instant::now();
        let n = plan.len();
        let spawn_prepare = |k: usize| -> JoinHandle<Result<SlotSentence, String>> {
            let (engine, speaker, plan, seed) = (engine.clone(), self.speaker.clone(), plan.clone(), self.seed);
            if engine.scheduler.condition().is_some() {
                tokio::spawn(async move { prepare_on_backend(&engine, &speaker, &plan[k], seed).await })
            } else {
                tokio::task::spawn_blocking(move || prepare(&engine, &speaker, &plan[k], seed))
            }
        };
        let send = |e: Event| async move {
            match tokio::time::timeout(self.stall, tx.send(e)).await {
                Ok(Ok(())) => true,
                // The body was dropped, or the client stopped reading.
                _ => {
                    cancel.cancel();
                    false
                }
            }
        };
        let (mut next, mut finished, mut samples) = (0usize, 0usize, 0usize);
        // Sentences conditioned on the GPU hold arena frames: the first waits for the slot.
        let mut assigned = engine.scheduler.condition().is_none();
        let mut pending: Option<JoinHandle<Result<SlotSentence, String>>> = None;
        if !send(Event::Sentence(plan[0].index())).await {
            return self.cancelled();
        }
        loop {
            if pending.is_none() && assigned && next < n && next <= finished + LOOKAHEAD {
                pending = Some(spawn_prepare(next));
                next += 1;
            }
            if cancel.is_cancelled() {
                return self.cancelled();
            }
            tokio::select! {
                r = async { pending.as_mut().expect("guarded").await }, if pending.is_some() => {
                    pending = None;
                    let sentence = match r {
                        Ok(Ok(s)) => s,
                        Ok(Err(msg)) => return Some(Event::Failed(msg)),
                        Err(e) => return Some(Event::Failed(format!("preparing a sentence: {e}"))),
                    };
                    if let Err(e) = stream.push(sentence) {
                        return Some(Event::Failed(e.to_string()));
                    }
                    if next == n {
                        let _ = stream.end();
                    }
                }
                ev = events.recv() => match ev {
                    Some(SlotEvent::Assigned) => assigned = true,
                    Some(SlotEvent::Audio(block)) => {
                        samples += block.len();
                        if !send(Event::Audio(block)).await {
                            return self.cancelled();
                        }
                    }
                    Some(SlotEvent::SentenceDone) => {
                        finished += 1;
                        if finished < n && !send(Event::Sentence(plan[finished].index())).await {
                            return self.cancelled();
                        }
                    }
                    Some(SlotEvent::Failed(msg)) => return Some(Event::Failed(msg)),
                    None if finished == n => break,
                    None if cancel.is_cancelled() => return self.cancelled(),
                    None => return Some(Event::Failed("the slot scheduler stopped".into())),
                },
                _ = tokio::time::sleep(POLL) => {}
            }
        }
        let render_s = t.elapsed().as_secs_f64();
        self.metrics.rendered(samples, self.speaker.sample_rate(), render_s);
        Some(Event::Done(Summary { render_s }))
    }

    fn cancelled(&self) -> Option<Event> {
        self.metrics.cancelled();
        None
    }
}
