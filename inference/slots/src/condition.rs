//! [`GpuConditioning`]: one thread running a voice's conditioning network on
//! the GPU ([`dv_gpu::GpuConditioner`]) for every request of that voice.
//! Requests hand it a sentence's frames and await the answer (no thread of
//! theirs waits, so thousands can be queued at once); the thread takes every
//! sentence waiting (up to a batch's frames and sentences), gives each a
//! span of the arena, runs them as one batch and answers each with its
//! span. A sentence that finds no room waits for frames to be freed (by
//! sentences that finish); one longer than the whole arena is refused.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dv_gpu::{CondPhases, GpuConditioner};

use crate::arena::{FrameArena, FrameSpan};
use crate::backend::{CondError, CondStats, Conditioned, DeviceRows, SlotCond, SlotError};

/// A conditioning network that runs batches of sentences into an arena of
/// u rows: [`GpuConditioner`] on the GPU (what `dv-serve` runs); CI drives
/// the thread with a CPU one.
pub trait ConditionBatches: Send + 'static {
    /// The width of a sentence's frames.
    fn input_dim(&self) -> usize;
    /// The most frames, and sentences, of one batch.
    fn batch_frames(&self) -> usize;
    fn max_batch(&self) -> usize;
    /// The arena's frames.
    fn arena_frames(&self) -> usize;
    /// Runs `sentences` (`[F_b, input_dim]`), sentence b's rows to arena
    /// frames `at[b] ..`; returns when they are there.
    fn run(&mut self, sentences: &[&[f32]], at: &[usize]) -> Result<(), SlotError>;
    /// Where its batches spent their time so far (none measured: zeros).
    fn phases(&self) -> CondPhases {
        CondPhases::default()
    }
}

impl ConditionBatches for GpuConditioner {
    fn input_dim(&self) -> usize {
        GpuConditioner::input_dim(self)
    }

    fn batch_frames(&self) -> usize {
        GpuConditioner::batch_frames(self)
    }

    fn max_batch(&self) -> usize {
        GpuConditioner::max_batch(self)
    }

    fn arena_frames(&self) -> usize {
        GpuConditioner::arena_frames(self)
    }

    fn run(&mut self, sentences: &[&[f32]], at: &[usize]) -> Result<(), SlotError> {
        Ok(GpuConditioner::run(self, sentences, at)?)
    }

    fn phases(&self) -> CondPhases {
        GpuConditioner::phases(self)
    }
}

struct Job {
    features: Vec<f32>,
    reply: tokio::sync::oneshot::Sender<Result<SlotCond, CondError>>,
}

/// The conditioning thread of one voice; dropping it ends the thread once
/// the requests in flight have their answers.
pub struct GpuConditioning {
    tx: Option<Sender<Job>>,
    stats: Arc<CondStats>,
    input_dim: usize,
    thread: Option<JoinHandle<()>>,
}

impl GpuConditioning {
    /// Starts the thread that owns `net`.
    pub fn spawn<N: ConditionBatches>(net: N) -> std::io::Result<Self> {
        let stats = Arc::new(CondStats {
            batches: AtomicU64::new(0),
            sentences: AtomicU64::new(0),
            frames: AtomicU64::new(0),
            run_us: AtomicU64::new(0),
            phase_us: Default::default(),
            pending: AtomicUsize::new(0),
            arena: FrameArena::new(net.arena_frames()),
        });
        let input_dim = net.input_dim();
        let (tx, rx) = mpsc::channel();
        let st = stats.clone();
        let thread = std::thread::Builder::new().name("dv-conditioning".into()).spawn(move || run(net, st, rx))?;
        Ok(Self { tx: Some(tx), stats, input_dim, thread: Some(thread) })
    }

    pub fn arena(&self) -> &Arc<FrameArena> {
        &self.stats.arena
    }

    pub fn stats(&self) -> &Arc<CondStats> {
        &self.stats
    }

    /// Queues `features` (`[F, input_dim]`); the answer is its conditioning
    /// left on the GPU, or why not.
    pub fn condition(&self, features: &[f32]) -> Result<Conditioned, SlotError> {
        let bad = |reason: String| SlotError::Slot { slot: 0, reason };
        if features.is_empty() || !features.len().is_multiple_of(self.input_dim) {
            return Err(bad(format!(
                "{} conditioning values (whole frames of {}, at least one)",
                features.len(),
                self.input_dim
            )));
        }
        let (reply, answer) = tokio::sync::oneshot::channel();
        let tx = self.tx.as_ref().ok_or(SlotError::Stopped)?;
        self.stats.pending.fetch_add(1, Ordering::Relaxed);
        if tx.send(Job { features: features.to_vec(), reply }).is_err() {
            self.stats.pending.fetch_sub(1, Ordering::Relaxed);
            return Err(SlotError::Stopped);
        }
        Ok(answer)
    }
}

impl Drop for GpuConditioning {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run<N: ConditionBatches>(mut net: N, stats: Arc<CondStats>, rx: Receiver<Job>) {
    let d = net.input_dim();
    let arena = stats.arena.clone();
    let mut pending: VecDeque<Job> = VecDeque::new();
    let mut open = true;
    while open || !pending.is_empty() {
        // Every job waiting now (blocking only when none is).
        if pending.is_empty() {
            match rx.recv() {
                Ok(j) => pending.push_back(j),
                Err(_) => return,
            }
        }
        loop {
            match rx.try_recv() {
                Ok(j) => pending.push_back(j),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        // A batch, first come first served, as far as frames and the arena allow.
        let (mut batch, mut spans, mut frames) = (Vec::new(), Vec::new(), 0usize);
        while let Some(j) = pending.front() {
            let f = j.features.len() / d;
            if f > arena.frames() || f > net.batch_frames() {
                let j = pending.pop_front().expect("front exists");
                stats.pending.fetch_sub(1, Ordering::Relaxed);
                let _ = j.reply.send(Err(CondError::TooLong { frames: f, max: arena.frames().min(net.batch_frames()) }));
                continue;
            }
            if batch.len() == net.max_batch() || frames + f > net.batch_frames() {
                break;
            }
            let Some(span) = arena.alloc(f) else { break };
            frames += f;
            batch.push(pending.pop_front().expect("front exists"));
            spans.push(span);
        }
        if batch.is_empty() {
            if !pending.is_empty() {
                // No room: wait for finished sentences to free theirs (or for more jobs).
                arena.wait_for_free(Duration::from_millis(5));
            }
            continue;
        }
        let feats: Vec<&[f32]> = batch.iter().map(|j| j.features.as_slice()).collect();
        let at: Vec<usize> = spans.iter().map(FrameSpan::at).collect();
        let t = Instant::now();
        let r = net.run(&feats, &at);
        let r_ = Ordering::Relaxed;
        stats.run_us.fetch_add(t.elapsed().as_micros() as u64, r_);
        let p = net.phases();
        for (c, v) in stats.phase_us.iter().zip([p.staging, p.upload, p.products, p.pooling]) {
            c.store((v * 1e6).round() as u64, r_);
        }
        stats.batches.fetch_add(1, r_);
        stats.sentences.fetch_add(batch.len() as u64, r_);
        stats.frames.fetch_add(frames as u64, r_);
        stats.pending.fetch_sub(batch.len(), r_);
        let r = r.map_err(|e| CondError::Network(Arc::new(e)));
        for (j, span) in batch.into_iter().zip(spans) {
            let answer = match &r {
                Ok(()) => Ok(SlotCond::Device(Arc::new(DeviceRows { span }))),
                Err(e) => Err(e.clone()),
            };
            let _ = j.reply.send(answer);
        }
    }
}
