//! One request's render on a blocking thread: plan the text, then render
//! sentence by sentence, sending blocks through a bounded channel. A failed
//! send (the response body was dropped: the client went away) or a send
//! stalled past the stall timeout cancels the render.

use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dv_speak::{RenderOptions, SpeakError, Speaker};
use dv_synth::Sampling;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::pool::Ticket;

/// Blocks buffered between the render and the response (about 0.8 s of
/// audio): enough to ride out a slow write, little enough that a client that
/// stops reading stops the render soon.
pub(crate) const CHANNEL_BLOCKS: usize = 8;

/// A timed phoneme or word, in seconds from the start of the audio.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Span {
    pub(crate) label: String,
    pub(crate) start_s: f64,
    pub(crate) end_s: f64,
}

/// A planned sentence's timings, offset to where it starts in the audio.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SentenceTimes {
    pub(crate) index: usize,
    pub(crate) text: String,
    pub(crate) start_s: f64,
    pub(crate) end_s: f64,
    /// The first sample of the sentence in the audio.
    pub(crate) start_sample: usize,
    pub(crate) samples: usize,
    pub(crate) phonemes: Vec<Span>,
    pub(crate) words: Vec<Span>,
}

/// What the plan says before any audio.
#[derive(Debug, Clone)]
pub(crate) struct Planned {
    pub(crate) rate: u32,
    pub(crate) seed: u64,
    pub(crate) sentences: Vec<SentenceTimes>,
}

/// What a finished render did.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Summary {
    /// Seconds the render took.
    pub(crate) render_s: f64,
}

pub(crate) enum Event {
    /// Sentence k starts (its audio follows).
    Sentence(usize),
    Audio(Vec<i16>),
    Done(Summary),
    /// The render failed after the plan.
    Failed(String),
}

/// Everything a job needs besides the request.
pub(crate) struct Job {
    pub(crate) speaker: Arc<Speaker>,
    pub(crate) input: String,
    pub(crate) speed: f32,
    pub(crate) seed: u64,
    pub(crate) block: usize,
    pub(crate) first_block: usize,
    pub(crate) sampling: Sampling,
    pub(crate) stall: Duration,
    pub(crate) metrics: Arc<Metrics>,
}

pub(crate) fn times(planned: &[dv_speak::Sentence], rate: u32) -> Vec<SentenceTimes> {
    let mut at = 0usize;
    planned
        .iter()
        .map(|s| {
            let start_sample = at;
            at += s.samples();
            let off = start_sample as f64 / rate as f64;
            let span =
                |label: &str, a: f64, b: f64| Span { label: label.to_string(), start_s: off + a, end_s: off + b };
            SentenceTimes {
                index: s.index(),
                text: s.text.clone(),
                start_s: off,
                end_s: at as f64 / rate as f64,
                start_sample,
                samples: s.samples(),
                phonemes: s.phonemes.iter().map(|p| span(&p.phoneme, p.start_s, p.end_s)).collect(),
                words: s.words.iter().map(|w| span(&w.word, w.start_s, w.end_s)).collect(),
            }
        })
        .collect()
}

impl Job {
    /// Waits for a worker, plans the text and starts rendering; returns the
    /// plan (or the request's error, such as an unspeakable word) and the
    /// channel the audio arrives on.
    pub(crate) async fn start(self, ticket: Ticket) -> Result<(Planned, mpsc::Receiver<Event>), ApiError> {
        let permit = ticket.worker().await?;
        let (tx, rx) = mpsc::channel(CHANNEL_BLOCKS);
        let (plan_tx, plan_rx) = oneshot::channel();
        let handle = tokio::runtime::Handle::current();
        let stall = self.stall;
        tokio::task::spawn_blocking(move || {
            let m = self.metrics.clone();
            m.rendering.fetch_add(1, Ordering::Relaxed);
            let last = self.run(&ticket, &handle, plan_tx, &tx);
            // The worker and the place are free before the client hears the
            // end, so its next request finds them.
            m.rendering.fetch_sub(1, Ordering::Relaxed);
            drop(permit);
            drop(ticket);
            if let Some(e) = last {
                let _ = handle.block_on(tokio::time::timeout(stall, tx.send(e)));
            }
        });
        let planned = plan_rx.await.map_err(|_| ApiError::internal("the render thread ended early".into()))??;
        Ok((planned, rx))
    }

    /// Plans and renders; returns the last event to send (Done or Failed)
    /// once the worker is released, `None` when cancelled.
    fn run(
        self,
        ticket: &Ticket,
        handle: &tokio::runtime::Handle,
        plan_tx: oneshot::Sender<Result<Planned, ApiError>>,
        tx: &mpsc::Sender<Event>,
    ) -> Option<Event> {
        let speaker = &self.speaker;
        let plan = match speaker.plan(&self.input, self.speed) {
            Ok(p) => p,
            Err(e) => {
                let _ = plan_tx.send(Err(e.into()));
                return None;
            }
        };
        let rate = speaker.sample_rate();
        let planned = Planned { rate, seed: self.seed, sentences: times(&plan, rate) };
        if plan_tx.send(Ok(planned)).is_err() {
            return None;
        }
        let cancel = &ticket.cancel;
        let send = |e: Event| -> bool {
            match handle.block_on(tokio::time::timeout(self.stall, tx.send(e))) {
                Ok(Ok(())) => true,
                // The body was dropped, or the client stopped reading.
                _ => {
                    cancel.cancel();
                    false
                }
            }
        };
        let options = RenderOptions {
            sampling: self.sampling,
            seed: self.seed,
            block: self.block,
            first_block: self.first_block,
            ..RenderOptions::default()
        };
        let t = Instant::now();
        let mut samples = 0;
        for sentence in &plan {
            if !send(Event::Sentence(sentence.index())) {
                break;
            }
            let r = speaker.render(sentence, &options, cancel, &mut |block| {
                samples += block.len();
                if send(Event::Audio(block.to_vec())) {
                    ControlFlow::Continue(())
                } else {
                    ControlFlow::Break(())
                }
            });
            match r {
                Ok(_) if !cancel.is_cancelled() => {}
                Ok(_) | Err(SpeakError::Cancelled) => break,
                Err(e) => return Some(Event::Failed(e.to_string())),
            }
        }
        let render_s = t.elapsed().as_secs_f64();
        if cancel.is_cancelled() {
            self.metrics.cancelled();
            return None;
        }
        self.metrics.rendered(samples, rate, render_s);
        Some(Event::Done(Summary { render_s }))
    }
}
