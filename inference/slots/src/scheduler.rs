//! [`Scheduler`]: one thread owning a [`MultiBackend`], and the handles
//! requests use to join it ([`SlotStream`]) and hear from it
//! ([`SlotEvent`]).
//!
//! The thread's loop: take commands (joins, sentences, ends, leaves); drop
//! members that left, were cancelled or whose receiver is gone (their slot
//! is stopped and freed at once); give waiting members the lowest free
//! slots; start every slot whose member has a sentence queued and none
//! running (one batched `start`); then, if any slot is sampling, submit one
//! launch of `block` samples; once the backend's [`MultiBackend::depth`]
//! launches are in flight (or nothing is left to submit), collect the
//! oldest and send each slot's codes to its member as 16-bit PCM. With
//! nothing to sample it sleeps on the command channel.
//!
//! Short first launches ([`Ramp`], `dv_speak`'s rule): a request's first
//! audio waits for the first launch it is in, so while the device has room
//! to spare a new request's first launch is short (512 samples) and the
//! next ones grow only as fast as the audio already delivered to it allows
//! (what the device can make while the listener plays what it has, less a
//! slack for jitter), up to `block`. The device's seconds per step are
//! measured from the launches collected; near capacity every launch keeps
//! `block` samples, so the capacity is unchanged. The other slots sample
//! the shorter launches too, and stay ahead of real time while the device
//! is faster than real time.
//!
//! Pipelining (depth 2 on the GPU): launch k + 1 is submitted before launch
//! k is collected, so the scheduler's own work (commands, starts, handing
//! out launch k's audio, staging launch k + 2) runs while the device
//! samples. Each submitted launch carries its plan: which member's sentence
//! each slot samples and how many of its samples. A sentence counts as
//! running until its last samples are submitted (not delivered), so the
//! member's next sentence starts at the next boundary with no idle launch
//! between; a member that leaves mid-flight has its slot stopped behind
//! the launches in flight, whose codes for it are dropped, and a member
//! whose events end is reaped only once no launch in flight holds its
//! samples.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dv_speak::{CancelToken, Ramp};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::backend::{Condition, LaunchTimes, MultiBackend, Prepare, SlotError, SlotSentence};

/// What a member hears, in order: `Assigned` once it has a slot, then each
/// sentence's audio in blocks, then `SentenceDone`; the channel closes after
/// the last sentence of an ended member, or after `Failed`.
#[derive(Debug, Clone, PartialEq)]
pub enum SlotEvent {
    /// The member holds a slot now. A request whose sentences hold device
    /// memory (the GPU conditioning arena) prepares its first one only from
    /// here: requests waiting for a slot hold none, so the arena never fills
    /// with sentences that cannot run while running ones wait for room.
    Assigned,
    /// The next samples of the running sentence (at most one block).
    Audio(Vec<i16>),
    /// The running sentence has all its samples.
    SentenceDone,
    /// The backend failed; the member has been dropped.
    Failed(String),
}

/// The scheduler's counters, read by `/metrics` and tests.
#[derive(Debug, Default)]
pub struct SlotStats {
    /// The backend's slots.
    pub slots: AtomicUsize,
    /// Slots held by a member (sampling or waiting for its next sentence).
    pub busy: AtomicUsize,
    /// Slots sampling a sentence in the last launch.
    pub sampling: AtomicUsize,
    /// Members waiting for a free slot.
    pub waiting: AtomicUsize,
    /// Launches, and the microseconds the scheduler spent submitting and
    /// collecting them (host and device).
    pub launches: AtomicU64,
    pub launch_us: AtomicU64,
    /// Where launches' time went ([`LaunchTimes`]), microseconds summed
    /// over launches: host staging of windows, upload, kernel, download,
    /// and the device idle between back-to-back launches (kernel waiting
    /// for the host).
    pub stage_us: AtomicU64,
    pub upload_us: AtomicU64,
    pub kernel_us: AtomicU64,
    pub download_us: AtomicU64,
    pub gap_us: AtomicU64,
    /// The scheduler thread's time blocked in `collect` (waiting for the
    /// device), and its time doing everything else while launches were in
    /// flight or submitted (commands, starts, staging, handing out audio).
    pub wait_us: AtomicU64,
    pub busy_us: AtomicU64,
    /// Slot-launches lost: slots held by a member with nothing to sample
    /// (its next sentence's conditioning not ready), summed over launches.
    pub starved: AtomicU64,
    /// Slot-samples produced (codes sent).
    pub samples: AtomicU64,
    /// Launches shorter than the block (a new request's first ones,
    /// [`Ramp`]).
    pub short: AtomicU64,
    /// Members dropped because they left early or were cancelled.
    pub left: AtomicU64,
    /// The backend's own conditioning network's counters, when it runs one.
    pub conditioning: Option<Arc<crate::backend::CondStats>>,
}

enum Command {
    Join { id: u64, cancel: CancelToken, events: UnboundedSender<SlotEvent> },
    Sentence { id: u64, sentence: Arc<SlotSentence> },
    End { id: u64 },
    Leave { id: u64 },
}

/// A request's place in the scheduler. Dropping it leaves (the slot is
/// freed at the next iteration, mid-sentence or not).
pub struct SlotStream {
    id: u64,
    tx: Sender<Command>,
}

impl SlotStream {
    /// Queues the request's next sentence (it runs once the ones before it
    /// are done).
    pub fn push(&self, sentence: SlotSentence) -> Result<(), SlotError> {
        self.tx.send(Command::Sentence { id: self.id, sentence: Arc::new(sentence) }).map_err(|_| SlotError::Stopped)
    }

    /// No more sentences: the member leaves after the queued ones and its
    /// event channel closes.
    pub fn end(&self) -> Result<(), SlotError> {
        self.tx.send(Command::End { id: self.id }).map_err(|_| SlotError::Stopped)
    }
}

impl Drop for SlotStream {
    fn drop(&mut self) {
        let _ = self.tx.send(Command::Leave { id: self.id });
    }
}

/// The handle of one scheduler thread. Dropping it lets the thread end once
/// every [`SlotStream`] is gone.
pub struct Scheduler {
    tx: Sender<Command>,
    next: AtomicU64,
    prepare: Prepare,
    condition: Option<Condition>,
    feeds_lead: bool,
    max_samples: usize,
    block: usize,
    stats: Arc<SlotStats>,
    thread: Option<JoinHandle<()>>,
}

impl Scheduler {
    /// Starts the thread that owns `backend`; each launch advances busy
    /// slots by `block` samples (≥ 1).
    pub fn spawn<B: MultiBackend>(backend: B, block: usize) -> std::io::Result<Scheduler> {
        Self::spawn_ramped(backend, block, None)
    }

    /// [`Scheduler::spawn`], with a new request's first launches short
    /// while the device has room to spare (`ramp`; None: every launch is
    /// `block` samples).
    pub fn spawn_ramped<B: MultiBackend>(backend: B, block: usize, ramp: Option<Ramp>) -> std::io::Result<Scheduler> {
        let (tx, rx) = mpsc::channel();
        let stats = Arc::new(SlotStats { conditioning: backend.condition_stats(), ..SlotStats::default() });
        stats.slots.store(backend.slots(), Ordering::Relaxed);
        let (prepare, feeds_lead, max_samples) = (backend.prepare(), backend.feeds_lead(), backend.max_samples());
        let condition = backend.condition();
        let block = block.max(1);
        let st = stats.clone();
        let thread = std::thread::Builder::new()
            .name("dv-slots".into())
            .spawn(move || Loop::new(backend, block, ramp, st).run(rx))?;
        Ok(Scheduler {
            tx,
            next: AtomicU64::new(0),
            prepare,
            condition,
            feeds_lead,
            max_samples,
            block,
            stats,
            thread: Some(thread),
        })
    }

    /// Joins: a handle to push sentences with, and the events. The member
    /// gets a slot at once when one is free, else when one frees (first
    /// come, first served); `cancel` set makes it leave.
    pub fn join(&self, cancel: CancelToken) -> Result<(SlotStream, UnboundedReceiver<SlotEvent>), SlotError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (events, rx) = unbounded_channel();
        self.tx.send(Command::Join { id, cancel, events }).map_err(|_| SlotError::Stopped)?;
        Ok((SlotStream { id, tx: self.tx.clone() }, rx))
    }

    /// The conversion each sentence's conditioning needs before
    /// [`SlotStream::push`].
    pub fn prepare(&self) -> &Prepare {
        &self.prepare
    }

    /// The backend's own conditioning network, if it runs one
    /// ([`MultiBackend::condition`]).
    pub fn condition(&self) -> Option<&Condition> {
        self.condition.as_ref()
    }

    /// Whether sentences' leads are fed as silence ([`SlotSentence::lead`]).
    pub fn feeds_lead(&self) -> bool {
        self.feeds_lead
    }

    /// The longest sentence a slot takes, in samples.
    pub fn max_samples(&self) -> usize {
        self.max_samples
    }

    /// Samples per launch.
    pub fn block(&self) -> usize {
        self.block
    }

    pub fn stats(&self) -> &Arc<SlotStats> {
        &self.stats
    }

    /// Whether the thread is still running (it ends only when every handle
    /// is gone, or after a panic).
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

/// A joined request.
struct Member {
    cancel: CancelToken,
    events: UnboundedSender<SlotEvent>,
    queue: VecDeque<Arc<SlotSentence>>,
    ended: bool,
    slot: Option<usize>,
    /// The sentence on the slot and its samples submitted, until its last
    /// samples are submitted.
    running: Option<(usize, Arc<SlotSentence>)>,
    /// Launches in flight holding samples of this member.
    inflight: usize,
    /// Samples submitted for it so far and sent to it, when its first
    /// audio went out, and whether its launches still follow the [`Ramp`]
    /// (until one would be a whole block).
    sent: usize,
    delivered: usize,
    first_out: Option<Instant>,
    ramping: bool,
}

impl Member {
    /// Nothing queued, running or in flight, and no more to come.
    fn finished(&self) -> bool {
        self.ended && self.queue.is_empty() && self.running.is_none() && self.inflight == 0
    }
}

/// One slot's share of a submitted launch.
struct Part {
    slot: usize,
    id: u64,
    /// Samples of the launch that are the member's.
    want: usize,
    /// The sentence's last samples.
    last: bool,
}

struct Loop<B> {
    backend: B,
    block: usize,
    ramp: Option<Ramp>,
    /// Device seconds per step of the launches collected (a moving
    /// average), for the ramp's load.
    per_step: Option<f64>,
    stats: Arc<SlotStats>,
    members: HashMap<u64, Member>,
    /// The member of each slot.
    owner: Vec<Option<u64>>,
    waiting: VecDeque<u64>,
    /// Submitted launches' steps and plans, oldest first.
    flights: VecDeque<(usize, Vec<Part>)>,
    depth: usize,
    out: Vec<i32>,
    pcm: [i16; 256],
}

/// Each mu-law code as 16-bit PCM ([`dv_speak::pcm`], as every render
/// writes it).
fn pcm_table() -> [i16; 256] {
    let mut t = [0i16; 256];
    for (c, v) in t.iter_mut().enumerate() {
        *v = dv_speak::pcm(c as u8);
    }
    t
}

impl<B: MultiBackend> Loop<B> {
    fn new(backend: B, block: usize, ramp: Option<Ramp>, stats: Arc<SlotStats>) -> Self {
        let (slots, depth) = (backend.slots(), backend.depth().max(1));
        Self {
            backend,
            block,
            ramp,
            per_step: None,
            stats,
            members: HashMap::new(),
            owner: vec![None; slots],
            waiting: VecDeque::new(),
            flights: VecDeque::new(),
            depth,
            out: vec![-1; slots * block],
            pcm: pcm_table(),
        }
    }

    fn run(mut self, rx: mpsc::Receiver<Command>) {
        loop {
            let t = Instant::now();
            loop {
                match rx.try_recv() {
                    Ok(c) => self.command(c),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return,
                }
            }
            self.reap();
            self.assign();
            self.start_ready();
            self.publish();
            let sampling = self.members.values().any(|m| m.running.is_some());
            if sampling && self.flights.len() < self.depth {
                self.submit();
            }
            if !self.flights.is_empty() {
                let submit_more = self.members.values().any(|m| m.running.is_some()) && self.flights.len() < self.depth;
                if !submit_more {
                    let waited = self.collect();
                    let busy = t.elapsed().saturating_sub(waited);
                    self.stats.busy_us.fetch_add(busy.as_micros() as u64, Ordering::Relaxed);
                }
                continue;
            }
            // Nothing to sample: sleep until a command (a timeout to notice cancellations).
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(c) => self.command(c),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn command(&mut self, c: Command) {
        match c {
            Command::Join { id, cancel, events } => {
                self.members.insert(
                    id,
                    Member {
                        cancel,
                        events,
                        queue: VecDeque::new(),
                        ended: false,
                        slot: None,
                        running: None,
                        inflight: 0,
                        sent: 0,
                        delivered: 0,
                        first_out: None,
                        ramping: self.ramp.is_some(),
                    },
                );
                self.waiting.push_back(id);
            }
            Command::Sentence { id, sentence } => {
                if let Some(m) = self.members.get_mut(&id) {
                    m.queue.push_back(sentence);
                }
            }
            Command::End { id } => {
                if let Some(m) = self.members.get_mut(&id) {
                    m.ended = true;
                }
            }
            Command::Leave { id } => {
                if self.members.get(&id).is_some_and(|m| !m.finished()) {
                    self.stats.left.fetch_add(1, Ordering::Relaxed);
                }
                self.remove(id);
            }
        }
    }

    /// Drops a member and frees (stops) its slot.
    fn remove(&mut self, id: u64) {
        let Some(m) = self.members.remove(&id) else { return };
        self.waiting.retain(|&w| w != id);
        if let Some(slot) = m.slot {
            self.owner[slot] = None;
            if m.running.is_some() {
                // Behind the launches in flight (their codes for it are dropped). A backend that
                // cannot stop a slot fails its next launch, and its members hear it.
                let _ = self.backend.stop(&[slot]);
            }
        }
    }

    /// Members that were cancelled, whose receiver is gone, or that are done.
    fn reap(&mut self) {
        let gone: Vec<(u64, bool)> = self
            .members
            .iter()
            .filter_map(|(&id, m)| {
                if m.cancel.is_cancelled() || m.events.is_closed() {
                    Some((id, true))
                } else if m.finished() {
                    Some((id, false))
                } else {
                    None
                }
            })
            .collect();
        for (id, early) in gone {
            if early {
                self.stats.left.fetch_add(1, Ordering::Relaxed);
            }
            self.remove(id);
        }
    }

    /// Waiting members take the lowest free slots, first come first served.
    fn assign(&mut self) {
        let mut free = self.owner.iter().enumerate().filter(|(_, o)| o.is_none()).map(|(k, _)| k);
        let mut taken = Vec::new();
        while let Some(&id) = self.waiting.front() {
            let Some(slot) = free.next() else { break };
            self.waiting.pop_front();
            taken.push((slot, id));
        }
        for (slot, id) in taken {
            self.owner[slot] = Some(id);
            if let Some(m) = self.members.get_mut(&id) {
                m.slot = Some(slot);
                // A send fails only when the receiver is gone: reaped next iteration.
                let _ = m.events.send(SlotEvent::Assigned);
            }
        }
    }

    /// Every slot whose member has a sentence queued and none running starts it.
    fn start_ready(&mut self) {
        let mut starts = Vec::new();
        for m in self.members.values_mut() {
            if let (Some(slot), None) = (m.slot, &m.running) {
                if let Some(s) = m.queue.pop_front() {
                    starts.push((slot, s.clone()));
                    m.running = Some((0, s));
                }
            }
        }
        if starts.is_empty() {
            return;
        }
        if let Err(e) = self.backend.start(&starts) {
            let slots: Vec<usize> = starts.iter().map(|(s, _)| *s).collect();
            self.fail(&slots, &e.to_string());
        }
    }

    /// The members of `slots` hear `msg` and are dropped.
    fn fail(&mut self, slots: &[usize], msg: &str) {
        for &slot in slots {
            if let Some(id) = self.owner[slot] {
                if let Some(m) = self.members.get(&id) {
                    let _ = m.events.send(SlotEvent::Failed(msg.to_string()));
                }
                self.remove(id);
            }
        }
    }

    fn publish(&self) {
        let busy = self.owner.iter().filter(|o| o.is_some()).count();
        self.stats.busy.store(busy, Ordering::Relaxed);
        self.stats.waiting.store(self.waiting.len(), Ordering::Relaxed);
    }

    /// The members of the parts of a failed launch hear `msg` and are
    /// dropped.
    fn fail_parts(&mut self, parts: &[Part], msg: &str) {
        for p in parts {
            if let Some(m) = self.members.get(&p.id) {
                let _ = m.events.send(SlotEvent::Failed(msg.to_string()));
            }
            self.remove(p.id);
        }
    }

    /// The next launch's samples: the block, or less while a running
    /// member's launches follow the [`Ramp`].
    fn steps(&mut self) -> usize {
        let Some(ramp) = self.ramp else { return self.block };
        let (now, rate, c) = (Instant::now(), f64::from(ramp.sample_rate), self.per_step);
        let mut steps = self.block;
        for m in self.members.values_mut() {
            if !m.ramping || m.running.is_none() {
                continue;
            }
            // The audio it will have buffered once the launches in flight are in.
            let ahead = m.first_out.map(|t1| {
                let inflight = (m.sent - m.delivered) as f64;
                m.sent as f64 / rate - now.duration_since(t1).as_secs_f64() - inflight * c.unwrap_or(0.0) * Ramp::MARGIN
            });
            let b = ramp.steps(ahead, c, self.block);
            if b >= self.block {
                m.ramping = false;
            } else {
                steps = steps.min(b);
            }
        }
        steps
    }

    /// Submits one launch: each running slot's share of its sentence.
    fn submit(&mut self) {
        let t = Instant::now();
        let steps = self.steps();
        let mut parts = Vec::new();
        let mut held = 0u64;
        for (slot, owner) in self.owner.iter().enumerate() {
            let Some(id) = *owner else { continue };
            let Some(m) = self.members.get_mut(&id) else { continue };
            let Some((submitted, sentence)) = m.running.as_mut() else {
                if !(m.ended && m.queue.is_empty()) {
                    held += 1;
                }
                continue;
            };
            let want = steps.min(sentence.samples - *submitted);
            *submitted += want;
            let last = *submitted == sentence.samples;
            if last {
                m.running = None;
            }
            m.inflight += 1;
            m.sent += want;
            parts.push(Part { slot, id, want, last });
        }
        self.stats.sampling.store(parts.len(), Ordering::Relaxed);
        self.stats.starved.fetch_add(held, Ordering::Relaxed);
        if steps < self.block {
            self.stats.short.fetch_add(1, Ordering::Relaxed);
        }
        let r = self.backend.submit(steps);
        self.stats.launch_us.fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
        match r {
            Ok(()) => self.flights.push_back((steps, parts)),
            Err(e) => {
                // The launches before it are delivered first.
                while !self.flights.is_empty() {
                    self.collect();
                }
                for p in &parts {
                    if let Some(m) = self.members.get_mut(&p.id) {
                        m.inflight -= 1;
                    }
                }
                self.fail_parts(&parts, &e.to_string());
            }
        }
    }

    /// Collects the oldest launch in flight; each part's codes go to its
    /// member (parts of members gone are dropped). Returns the time spent
    /// waiting for the backend.
    fn collect(&mut self) -> Duration {
        let Some((steps, parts)) = self.flights.pop_front() else { return Duration::ZERO };
        let t = Instant::now();
        let slots = self.owner.len();
        let r = self.backend.collect(&mut self.out[..slots * steps]);
        let waited = t.elapsed();
        let st = &self.stats;
        st.launches.fetch_add(1, Ordering::Relaxed);
        st.launch_us.fetch_add(waited.as_micros() as u64, Ordering::Relaxed);
        st.wait_us.fetch_add(waited.as_micros() as u64, Ordering::Relaxed);
        for p in &parts {
            if let Some(m) = self.members.get_mut(&p.id) {
                m.inflight -= 1;
            }
        }
        let times = match r {
            Ok(t) => t,
            Err(e) => {
                self.fail_parts(&parts, &e.to_string());
                return waited;
            }
        };
        let us = |s: f64| (s.max(0.0) * 1e6) as u64;
        let LaunchTimes { stage_s, upload_s, kernel_s, download_s, gap_s } = times;
        st.stage_us.fetch_add(us(stage_s), Ordering::Relaxed);
        st.upload_us.fetch_add(us(upload_s), Ordering::Relaxed);
        st.kernel_us.fetch_add(us(kernel_s), Ordering::Relaxed);
        st.download_us.fetch_add(us(download_s), Ordering::Relaxed);
        st.gap_us.fetch_add(us(gap_s), Ordering::Relaxed);
        // The device's time per step, for the ramp: a moving average over launches.
        let c = (upload_s + kernel_s + download_s + gap_s.max(0.0)) / steps as f64;
        if c.is_finite() && c > 0.0 {
            self.per_step = Some(self.per_step.map_or(c, |p| 0.7 * p + 0.3 * c));
        }
        let mut produced = 0u64;
        for p in parts {
            // A member gone (left, cancelled, failed) or on another slot: its codes are dropped.
            let Some(m) = self.members.get_mut(&p.id) else { continue };
            if m.slot != Some(p.slot) {
                continue;
            }
            let row = &self.out[p.slot * steps..p.slot * steps + p.want];
            let bad = row.iter().filter(|&&c| !(0..=255).contains(&c)).count();
            if bad > 0 {
                let msg = format!("slot {}: {bad} of {} samples missing from the launch", p.slot, p.want);
                let _ = m.events.send(SlotEvent::Failed(msg));
                self.remove(p.id);
                continue;
            }
            let block: Vec<i16> = row.iter().map(|&c| self.pcm[c as usize]).collect();
            produced += p.want as u64;
            m.delivered += p.want;
            m.first_out.get_or_insert_with(Instant::now);
            // A send fails only when the receiver is gone: reaped next iteration.
            let _ = m.events.send(SlotEvent::Audio(block));
            if p.last {
                let _ = m.events.send(SlotEvent::SentenceDone);
            }
        }
        self.stats.samples.fetch_add(produced, Ordering::Relaxed);
        waited
    }
}
