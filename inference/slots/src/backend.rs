//! What a multi-stream sampler offers the scheduler.

use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::Arc;

use dv_synth::Conditioning;
use thiserror::Error;

use crate::arena::FrameArena;

/// What a slot backend can fail with.
#[derive(Debug, Error)]
pub enum SlotError {
    #[error(transparent)]
    Gpu(#[from] dv_gpu::GpuError),
    #[error(transparent)]
    Synth(#[from] dv_synth::SynthError),
    /// A slot index or length the backend does not have.
    #[error("slot {slot}: {reason}")]
    Slot { slot: usize, reason: String },
    /// The scheduler thread is gone (it stopped after a panic).
    #[error("the slot scheduler has stopped")]
    Stopped,
    /// A sentence (numbered from 1) longer than a slot takes.
    #[error("sentence {sentence} is {seconds:.1} s long; a slot takes at most {max_s:.1} s")]
    TooLong { sentence: usize, seconds: f64, max_s: f64 },
    /// Asked for the backend's conditioning network where it runs none.
    #[error("the backend runs no conditioning network")]
    NoConditioning,
    /// The conditioning thread went away before it answered.
    #[error("the conditioning thread stopped")]
    ConditioningStopped,
    /// The conditioning thread refused or failed a sentence.
    #[error(transparent)]
    Conditioning(#[from] CondError),
}

/// Why the conditioning thread refused or failed a sentence. `Clone`: one
/// failed batch answers each of its sentences.
#[derive(Debug, Clone, Error)]
pub enum CondError {
    /// A sentence longer than the conditioning arena or batch takes.
    #[error("a sentence of {frames} frames: the GPU conditioning takes at most {max} at once")]
    TooLong { frames: usize, max: usize },
    /// The conditioning network failed the sentence's batch.
    #[error("the conditioning network: {0}")]
    Network(Arc<SlotError>),
}

/// A sentence's conditioning as a slot reads it.
#[derive(Debug, Clone)]
pub enum SlotCond {
    /// `[F, ℓ·2r]` rows on the host, made ready by the backend's
    /// [`MultiBackend::prepare`].
    Rows(Conditioning),
    /// The conditioning network's output left on the GPU
    /// ([`MultiBackend::condition`]).
    Device(Arc<DeviceRows>),
}

impl SlotCond {
    pub fn frames(&self) -> usize {
        match self {
            SlotCond::Rows(c) => c.frames(),
            SlotCond::Device(d) => d.span.frames(),
        }
    }

    /// The host rows, if that is where they are.
    pub fn rows(&self) -> Option<&Conditioning> {
        match self {
            SlotCond::Rows(c) => Some(c),
            SlotCond::Device(_) => None,
        }
    }
}

/// A sentence's u rows in a GPU arena; the frames are freed when the last
/// holder (the request, the slot, the launches in flight) lets go.
#[derive(Debug)]
pub struct DeviceRows {
    pub span: crate::arena::FrameSpan,
}

/// One sentence for a slot.
#[derive(Debug, Clone)]
pub struct SlotSentence {
    pub cond: SlotCond,
    /// Samples to produce (at most F · hop).
    pub samples: usize,
    /// The sentence's sampler seed (`dv_speak::sentence_seed`).
    pub seed: u64,
    /// Leading samples fed and sent as silence (0 unless the backend
    /// [`MultiBackend::feeds_lead`]).
    pub lead: usize,
    /// Whether each conditioning frame is voiced (`dv_speak::Sentence::voiced`),
    /// which voiced-only temperature reads; a frame past its end counts as voiced.
    pub voiced: Arc<[bool]>,
}

impl SlotSentence {
    /// Whether frame `f` is voiced.
    pub fn voiced(&self, f: usize) -> bool {
        self.voiced.get(f).copied().unwrap_or(true)
    }
}

/// Turns the conditioning network's output into what a backend's slots
/// read; runs on the request's side (many at once), not on the scheduler.
pub type Prepare = Arc<dyn Fn(Conditioning) -> Result<Conditioning, SlotError> + Send + Sync>;

/// Queues a sentence's frames (`[F, input_dim]`) for the conditioning
/// network where the backend keeps its output; the answer arrives on the
/// receiver (awaited by the request, holding no thread).
pub type Condition = Arc<dyn Fn(&[f32]) -> Result<Conditioned, SlotError> + Send + Sync>;

/// The answer to a [`Condition`] call.
pub type Conditioned = tokio::sync::oneshot::Receiver<Result<SlotCond, CondError>>;

/// A sampler of `slots()` independent streams advanced together. Owned by
/// one scheduler thread; nothing here is called from two threads.
pub trait MultiBackend: Send + 'static {
    /// Stream slots (`0 .. slots()`).
    fn slots(&self) -> usize;

    /// Whether [`SlotSentence::lead`] is honoured (the lead fed as silence).
    fn feeds_lead(&self) -> bool;

    /// The conversion of [`SlotSentence::cond`] for this backend.
    fn prepare(&self) -> Prepare;

    /// The backend's own conditioning network, when it runs one (the GPU's:
    /// its output stays on the device); `None`: requests run the CPU's and
    /// [`MultiBackend::prepare`] its rows.
    fn condition(&self) -> Option<Condition> {
        None
    }

    /// The counters of that network, when it runs one.
    fn condition_stats(&self) -> Option<Arc<CondStats>> {
        None
    }

    /// The longest sentence a slot takes, in samples.
    fn max_samples(&self) -> usize;

    /// Each `(slot, sentence)` starts from t = 0: silence before, zero
    /// histories, `dv_synth::Rng::new(sentence.seed)`. Other slots keep
    /// their state.
    fn start(&mut self, starts: &[(usize, Arc<SlotSentence>)]) -> Result<(), SlotError>;

    /// The slots stop and stay idle until started again.
    fn stop(&mut self, slots: &[usize]) -> Result<(), SlotError>;

    /// Launches this backend may have in flight: the scheduler submits up
    /// to this many before it collects the oldest (2 on the GPU: launch
    /// k + 1 is prepared and uploaded while launch k runs).
    fn depth(&self) -> usize {
        1
    }

    /// Queues one launch advancing every started slot by up to `steps`
    /// samples (at most the scheduler's block). Starts and stops made
    /// after it take effect from the next launch.
    fn submit(&mut self, steps: usize) -> Result<(), SlotError>;

    /// The oldest submitted launch's codes, waiting for it: `out` is
    /// `[slots, steps]`, each slot's mu-law codes, −1 where it was idle or
    /// had finished; and where its time went.
    fn collect(&mut self, out: &mut [i32]) -> Result<LaunchTimes, SlotError>;
}

/// Where one launch's time went (seconds), for `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LaunchTimes {
    /// Host time filling the launch's conditioning windows.
    pub stage_s: f64,
    /// The windows' copy to the device.
    pub upload_s: f64,
    /// The kernel (on the CPU backend: the sampling).
    pub kernel_s: f64,
    /// The codes' copy back.
    pub download_s: f64,
    /// The device idle between the previous launch and this one while this
    /// one was already submitted: the kernel waiting for the host.
    pub gap_s: f64,
}

/// The conditioning thread's counters, for `/metrics` and tests.
#[derive(Debug)]
pub struct CondStats {
    /// Batches run, the sentences and frames in them, and the seconds
    /// (microseconds here) the thread spent running them.
    pub batches: AtomicU64,
    pub sentences: AtomicU64,
    pub frames: AtomicU64,
    pub run_us: AtomicU64,
    /// Of that time, the network's phases (staging, upload, products,
    /// pooling: [`dv_gpu::CondPhases`]), microseconds.
    pub phase_us: [AtomicU64; 4],
    /// Sentences queued and not yet run (waiting for a batch or for room).
    pub pending: AtomicUsize,
    /// The arena (its frames in all and free now).
    pub arena: Arc<FrameArena>,
}
