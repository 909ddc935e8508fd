//! How a [`crate::Speaker`] is built and how a sentence is rendered.

use std::path::PathBuf;
use std::str::FromStr;

use dv_synth::{Kernel, Nonlinearity, Precision, Sampling};

use crate::error::SpeakError;

/// Where the WaveNet samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Device {
    /// The CPU sampler of `dv-synth` (scalar or AVX2/FMA).
    #[default]
    Cpu,
    /// GPU 0, kernel 1 of `dv-gpu`: one sentence per launch (compute
    /// capability 9.0).
    Cuda,
}

impl FromStr for Device {
    type Err = SpeakError;

    /// `cpu` or `cuda`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda),
            _ => Err(SpeakError::BadOption { what: "device", reason: format!("{s:?} is not cpu or cuda") }),
        }
    }
}

/// How a [`crate::Speaker`] loads: the sampler's device and options, and
/// where the lexicon comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeakerOptions {
    pub device: Device,
    /// (cpu) The CPU kernel.
    pub kernel: Kernel,
    /// (cpu) float32, or int16 weights (§5.1; needs AVX2/FMA).
    pub precision: Precision,
    /// (cpu) Exact or App. C nonlinearities.
    pub nonlinearity: Nonlinearity,
    /// (cpu) Sampler threads per sentence: 1, or 2 for §5.1's main +
    /// auxiliary split (needs AVX2/FMA).
    pub threads: usize,
    /// The lexicon when the package has no `lexicon.dict` (default: CMUDict,
    /// [`dv_text::LexiconSource::cmudict`]: `$DV_CMUDICT`, else built in).
    pub lexicon: Option<PathBuf>,
    /// Where passing golden-parity verdicts are cached, per package digest
    /// and build ([`crate::Parity::check_cached`]; `dv synth` uses
    /// [`crate::Parity::cache_dir`]). Default `None`: every load checks.
    pub parity_cache: Option<PathBuf>,
    /// (cuda) bfloat16 weight matrices instead of float32.
    pub bf16: bool,
    /// (cuda) Thread blocks in the cluster (default: the largest of 16, 8,
    /// 4, 2, 1 that divides r).
    pub cluster: Option<usize>,
    /// (cuda) The chain-block kernel with this many helper blocks.
    pub helpers: Option<usize>,
    /// (cuda) The layer-split chain kernel with this many layers per chain
    /// block (with `bf16` and neither `cluster` nor `helpers`, r = 64 gets
    /// it with 8 and r = 32 with 10).
    pub layers_per_block: Option<usize>,
}

impl Default for SpeakerOptions {
    /// The CPU, the fastest kernel this CPU has, the paper's exact float32
    /// model on one thread, the lexicon by the package or CMUDict.
    fn default() -> Self {
        Self {
            device: Device::Cpu,
            kernel: Kernel::detect(),
            precision: Precision::F32,
            nonlinearity: Nonlinearity::Exact,
            threads: 1,
            lexicon: None,
            parity_cache: None,
            bf16: false,
            cluster: None,
            helpers: None,
            layers_per_block: None,
        }
    }
}

/// The sampling mode a voice speaks with unless told otherwise: temperature
/// 0.7 on voiced frames, direct sampling elsewhere. Judged by whisper and
/// DNSMOS on 60 novel sentences (`benchmarks/voice.md`,
/// `benchmarks/newspeaker.md`; 0.5, 0.6 and 0.7 measured), it raises DNSMOS
/// OVRL by about 0.1 over direct sampling (the paper's choice, `--sampling
/// direct`) on the shipped voice and on a voice retrained on an hour of a
/// new speaker, at direct sampling's word error rate; lower temperatures
/// buy a little more DNSMOS for a point of WER.
pub const DEFAULT_SAMPLING: Sampling = Sampling::VoicedTemperature(0.7);

/// About 100 ms at 16384 Hz: the default [`RenderOptions::block`].
pub const DEFAULT_BLOCK: usize = 1638;

/// About 31 ms at 16384 Hz: the default [`RenderOptions::first_block`], a
/// sentence's first samples handed over sooner (a stream's first audio).
/// 256 samples (16 ms) left a listener who plays from the first byte short by
/// up to 9-19 ms in the first blocks on 2 cores (the edge resampler holds a
/// few milliseconds back, and the host jitters): `benchmarks/serve/first_audio.sh`,
/// benchmarks/serve.md.
pub const DEFAULT_FIRST_BLOCK: usize = 512;

/// Short first blocks for a streamed answer: its first audio waits for
/// `first` samples, not a whole block, and the blocks after grow only as
/// fast as the audio already delivered allows, so that a client playing
/// from the first byte never runs dry. Each next block holds what the
/// sampler can make while the listener plays the audio it already has, less
/// [`Ramp::SLACK_S`] for the host's jitter: `(ahead - SLACK_S) / (c MARGIN)`
/// samples, `ahead` the audio buffered at the client when the block starts
/// and `c` the measured seconds per sample, at least `first`, at most the
/// block. Near capacity (`c` × rate × MARGIN ≥ [`Ramp::MAX_LOAD`]) every
/// block is whole. `dv_speak::Speaker::render` ramps a sentence's blocks on
/// the CPU; `dv_slots` ramps a new request's launches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ramp {
    /// The first block, samples (clamped to the block).
    pub first: usize,
    /// The voice's sample rate, Hz.
    pub sample_rate: u32,
}

impl Ramp {
    /// Above this load (seconds per second of audio, times [`Ramp::MARGIN`])
    /// every block is whole.
    pub const MAX_LOAD: f64 = 0.95;
    /// The measured seconds per sample are multiplied by this.
    pub const MARGIN: f64 = 1.15;
    /// Audio kept buffered beyond the next block's making, for the host's
    /// jitter (threads, the network, the client).
    pub const SLACK_S: f64 = 0.025;

    /// The next block's samples: `ahead_s`, the audio the listener has
    /// buffered when the block starts (None before any audio went out),
    /// `per_sample_s` the measured seconds per sample (None before any were
    /// timed), blocks of at most `block`.
    pub fn steps(&self, ahead_s: Option<f64>, per_sample_s: Option<f64>, block: usize) -> usize {
        let first = self.first.clamp(1, block);
        match (ahead_s, per_sample_s.map(|c| c * Self::MARGIN)) {
            (_, Some(c)) if c * f64::from(self.sample_rate) >= Self::MAX_LOAD => block,
            (Some(ahead), Some(c)) if c > 0.0 => (((ahead - Self::SLACK_S) / c).max(0.0) as usize).clamp(first, block),
            _ => first,
        }
    }
}

/// How one sentence is rendered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RenderOptions {
    /// App. A.4's sampling mode (the GPU runs direct, mode, temperature and
    /// voiced-only temperature).
    pub sampling: Sampling,
    /// The text's seed: sentence k samples with
    /// `seed ^ k · 0x9e3779b97f4a7c15`, so a sentence's audio does not
    /// depend on how the text around it was split.
    pub seed: u64,
    /// Stop after this many samples of the sentence.
    pub max_samples: Option<usize>,
    /// The most samples handed to the sink at once (at least 1). On the CPU
    /// the sampler stops every `block` samples to hand them over and check
    /// for cancellation; the samples do not depend on it.
    pub block: usize,
    /// The first hand-over of each sentence on the CPU, samples (at most
    /// `block`; 0: every hand-over is `block`), so that a stream's first
    /// audio waits for 512 samples rather than 1,638; the hand-overs after it
    /// grow as [`Ramp`] allows. The samples do not depend on it.
    pub first_block: usize,
}

impl Default for RenderOptions {
    /// [`DEFAULT_SAMPLING`], seed 0, the whole sentence, [`DEFAULT_BLOCK`]
    /// (the first [`DEFAULT_FIRST_BLOCK`]).
    fn default() -> Self {
        Self {
            sampling: DEFAULT_SAMPLING,
            seed: 0,
            max_samples: None,
            block: DEFAULT_BLOCK,
            first_block: DEFAULT_FIRST_BLOCK,
        }
    }
}

/// The seed of sentence `index` of a text sampled with `seed`.
pub fn sentence_seed(seed: u64, index: usize) -> u64 {
    seed ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}
