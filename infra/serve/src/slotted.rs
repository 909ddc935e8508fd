//! One request on its voice's slot engine ([`dv_slots::SlotEngine`]): wait
//! for a render permit, plan the text (on a blocking thread), then join the
//! scheduler and feed it sentence by sentence, each sentence prepared by
//! the engine at most one sentence ahead of the one sampling (on a blocking
//! thread, or queued on the backend's own network on the GPU and awaited,
//! the first once the request holds a slot) while the slot's blocks are
//! forwarded to the response. A response that is dropped or stalls past
//! the stall timeout, a cancelled ticket, or a failed backend ends the
//! request and frees its slot.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dv_slots::{SlotEngine, SlotError, SlotEvent, SlotSentence, SlotStream};
use dv_speak::Sentence;
use tokio::sync::{mpsc, OwnedSemaphorePermit};
use tokio::task::JoinHandle;

use crate::error::ApiError;
use crate::job::{times, Event, Job, Planned, Summary, CHANNEL_BLOCKS};
use crate::pool::Ticket;

/// Sentences prepared ahead of the one sampling.
const LOOKAHEAD: usize = 1;

/// How often a request waiting on its slot checks its cancel token.
const POLL: Duration = Duration::from_millis(50);

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
        let (stream, mut events): (SlotStream, _) = match engine.scheduler().join(cancel.clone()) {
            Ok(j) => j,
            Err(e) => return Some(Event::Failed(e.to_string())),
        };
        let t = Instant::now();
        let n = plan.len();
        let spawn_prepare = |k: usize| -> JoinHandle<Result<SlotSentence, SlotError>> {
            let (engine, speaker, plan, seed) = (engine.clone(), self.speaker.clone(), plan.clone(), self.seed);
            if engine.conditions_on_backend() {
                tokio::spawn(async move { engine.prepare_on_backend(&speaker, &plan[k], seed).await })
            } else {
                tokio::task::spawn_blocking(move || engine.prepare(&speaker, &plan[k], seed))
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
        let mut assigned = !engine.conditions_on_backend();
        let mut pending: Option<JoinHandle<Result<SlotSentence, SlotError>>> = None;
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
                        Ok(Err(e)) => return Some(Event::Failed(e.to_string())),
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
