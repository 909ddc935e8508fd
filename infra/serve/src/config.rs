//! How a server runs: [`ServeConfig`] (what the binary's flags set) and,
//! for `--device cuda` and `cpu-slots`, each voice's slot scheduler
//! ([`SlotConfig`]).

use std::path::PathBuf;
use std::time::Duration;

use dv_speak::SpeakerOptions;
use dv_synth::Sampling;

/// The largest request body (a 4096-character input, escaped, fits many
/// times over).
pub const MAX_BODY: usize = 64 * 1024;

/// How a server runs. [`ServeConfig::new`] gives the defaults the binary
/// uses for what it is not told.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Renders at once (default: the cores).
    pub workers: usize,
    /// Requests that may wait for a worker beyond those rendering (default
    /// 2 × workers); more are 429.
    pub queue: usize,
    /// Bearer token required on `/v1/*`.
    pub api_key: Option<String>,
    /// Where voices are found by name, first match wins.
    pub voices: Vec<PathBuf>,
    /// The voice of requests that name none, loaded at start with `preload`.
    pub default_voice: String,
    /// Voices kept loaded at once.
    pub max_voices: usize,
    /// How voices are loaded (device, CPU kernel, precision) and where
    /// their golden-parity verdicts are cached (`parity_cache`; the binary:
    /// `$DV_HOME/parity`, [`dv_speak::Parity::cache_dir`], as `dv synth`).
    pub speaker: SpeakerOptions,
    /// Load the default voice at start (so `/readyz` means it).
    pub preload: bool,
    /// The request line and headers must arrive within this.
    pub header_timeout: Duration,
    /// The body must arrive within this.
    pub body_timeout: Duration,
    /// A client that reads nothing for this long loses its render.
    pub stall_timeout: Duration,
    /// After a shutdown signal, in-flight requests get this long to finish;
    /// then their renders are cancelled.
    pub shutdown_grace: Duration,
    /// Samples per streamed block (1638: about 100 ms at 16384 Hz).
    pub block: usize,
    /// A sentence's first streamed block on the CPU, samples (512; 0:
    /// `block`): first audio sooner. The slots' own is
    /// [`SlotConfig::first_block`].
    pub first_block: usize,
    /// How every voice samples (default [`dv_speak::DEFAULT_SAMPLING`]).
    pub sampling: Sampling,
    /// Render on slot schedulers (one per voice) instead of the worker pool:
    /// `--device cuda` (and `cpu-slots`). `workers` is then ignored: at most
    /// `slots.slots` requests render at once.
    pub slots: Option<SlotConfig>,
}

/// Where a slot scheduler samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotBackend {
    /// `dv-gpu`'s multi-stream kernel on GPU `device`.
    Cuda { device: usize },
    /// `dv-synth`'s sampler, every slot in turn on the scheduler's thread.
    Cpu,
}

/// A voice's slot scheduler ([`dv_slots`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SlotConfig {
    pub backend: SlotBackend,
    /// Slots per voice (the GPU rounds up to whole blocks of its kernel),
    /// and so the requests rendering at once.
    pub slots: usize,
    /// Samples per launch, sent as one block (1638: about 100 ms).
    pub block: usize,
    /// A new request's first launch while the device has room to spare
    /// ([`dv_speak::Ramp`]; 0: every launch is `block`).
    pub first_block: usize,
    /// The longest sentence a slot takes, seconds; a longer one fails its
    /// request (the GPU keeps this much conditioning room per pool).
    pub max_sentence_s: f64,
}

impl SlotConfig {
    /// `slots` slots on `backend`, launches of [`dv_speak::DEFAULT_BLOCK`]
    /// samples (a new request's first ones [`dv_speak::DEFAULT_FIRST_BLOCK`] while
    /// the device has room), sentences up to 120 s.
    pub fn new(backend: SlotBackend, slots: usize) -> Self {
        Self {
            backend,
            slots: slots.max(1),
            block: dv_speak::DEFAULT_BLOCK,
            first_block: dv_speak::DEFAULT_FIRST_BLOCK,
            max_sentence_s: 120.0,
        }
    }
}

impl ServeConfig {
    pub fn new(voices: Vec<PathBuf>, default_voice: String) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self {
            workers: cores,
            queue: 2 * cores,
            api_key: None,
            voices,
            default_voice,
            max_voices: 8,
            speaker: SpeakerOptions::default(),
            preload: true,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            stall_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(10),
            block: dv_speak::DEFAULT_BLOCK,
            first_block: dv_speak::DEFAULT_FIRST_BLOCK,
            sampling: dv_speak::DEFAULT_SAMPLING,
            slots: None,
        }
    }
}
