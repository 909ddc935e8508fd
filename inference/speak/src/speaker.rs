//! [`Speaker`]: a loaded, checked voice package and everything text needs
//! on its way to audio.

use std::path::{Path, PathBuf};

use dv_synth::{ConditioningNetwork, DurationModel, G2p, Kernel, SamplerOptions};
use dv_text::{Lexicon, LexiconSource};
use dv_voice::Voice;

use crate::backend::Backend;
use crate::error::SpeakError;
use crate::options::{Device, SpeakerOptions};
use crate::parity::Parity;
use crate::pronunciation::pronounce;
use crate::sentence::{plan_sentence, Sentence};

/// The file of a voice package's own lexicon (CMUDict format), optional.
pub const LEXICON_FILE: &str = "lexicon.dict";

/// The slowest and fastest [`Speaker::plan`] speeds.
pub const SPEED_RANGE: std::ops::RangeInclusive<f32> = 0.25..=4.0;

/// The text side of a package that can time phonemes: its duration/F0
/// model, the lexicon, and the G2P model when it has one.
pub(crate) struct TextModels {
    pub(crate) duration: DurationModel,
    pub(crate) lexicon: Lexicon,
    pub(crate) lexicon_source: LexiconSource,
    pub(crate) g2p: Option<G2p>,
}

/// A voice package ready to speak: its models checked against their golden
/// outputs, the lexicon loaded, the sampler prepared. Immutable and
/// `Send + Sync`: one `Speaker` serves any number of threads, each
/// [`Speaker::render`] call with its own sampler state.
pub struct Speaker {
    pub(crate) voice: Voice,
    /// `None` for a WaveNet-only package (it renders given frames only).
    pub(crate) text: Option<TextModels>,
    pub(crate) network: ConditioningNetwork,
    pub(crate) backend: Backend,
    pub(crate) parity: Parity,
    /// Whether `parity` is a cached verdict.
    pub(crate) parity_cached: bool,
    pub(crate) options: SpeakerOptions,
}

/// A `Speaker` is shared across a server's threads.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Speaker>();
};

impl Speaker {
    /// Reads the package in `dir`, runs its golden-parity checks (refusing
    /// it with [`SpeakError::GoldenMismatch`], naming `dir` and the model,
    /// when one does not reproduce its trainer's outputs; or takes their
    /// verdict from `options.parity_cache`) and prepares it.
    /// The lexicon is `dir/lexicon.dict` when present, else
    /// `options.lexicon`, else CMUDict (`$DV_CMUDICT`, else the copy built
    /// into the binary: [`LexiconSource::cmudict`]); it is loaded only for a
    /// package with a duration/F0 model (one that can speak text).
    pub fn load(dir: &Path, options: &SpeakerOptions) -> Result<Speaker, SpeakError> {
        let voice = Voice::read(dir).map_err(|source| SpeakError::Package { dir: dir.to_path_buf(), source })?;
        Self::from_package(voice, dir, options)
    }

    /// [`Speaker::load`] for a package already read from `dir` (for
    /// example to calibrate the sampler on it first,
    /// [`crate::calibrate`]): the same checks and the same lexicon rule.
    pub fn from_package(voice: Voice, dir: &Path, options: &SpeakerOptions) -> Result<Speaker, SpeakError> {
        let own = dir.join(LEXICON_FILE);
        let lexicon = if own.is_file() { Some(own) } else { options.lexicon.clone() };
        Self::build(voice, dir, lexicon, options)
    }

    /// [`Speaker::load`] for a package already in memory (it has no
    /// directory, so no `lexicon.dict`: `options.lexicon`, else CMUDict).
    /// Its golden outputs are checked as `load` checks them, with errors
    /// naming the directory `(in memory)`.
    pub fn from_voice(voice: Voice, options: &SpeakerOptions) -> Result<Speaker, SpeakError> {
        Self::build(voice, Path::new("(in memory)"), options.lexicon.clone(), options)
    }

    fn build(
        voice: Voice,
        dir: &Path,
        lexicon: Option<PathBuf>,
        options: &SpeakerOptions,
    ) -> Result<Speaker, SpeakError> {
        let (parity, parity_cached) = Parity::check_cached(&voice, dir, options.parity_cache.as_deref())?;
        let text = match voice.config().duration {
            None => None,
            Some(_) => {
                let lexicon_source = LexiconSource::file_or_cmudict(lexicon)?;
                Some(TextModels {
                    duration: DurationModel::new(&voice)?,
                    lexicon: lexicon_source.load()?,
                    lexicon_source,
                    g2p: voice.config().g2p.as_ref().map(|_| G2p::new(&voice)).transpose()?,
                })
            }
        };
        Ok(Speaker {
            network: ConditioningNetwork::new(&voice)?,
            backend: Backend::new(&voice, options)?,
            voice,
            text,
            parity,
            parity_cached,
            options: options.clone(),
        })
    }

    pub fn voice(&self) -> &Voice {
        &self.voice
    }

    /// Samples per second of the audio (16384 for the paper's voices).
    pub fn sample_rate(&self) -> u32 {
        self.voice.config().sample_rate
    }

    /// Samples per conditioning frame (64).
    pub fn hop(&self) -> usize {
        self.voice.config().hop()
    }

    /// The golden-parity figures measured at load, for printing.
    pub fn parity(&self) -> &Parity {
        &self.parity
    }

    /// Whether [`Speaker::parity`] is a verdict cached by an earlier load of
    /// the same package by the same build ([`SpeakerOptions::parity_cache`]).
    pub fn parity_cached(&self) -> bool {
        self.parity_cached
    }

    /// The options the speaker was built with.
    pub fn options(&self) -> &SpeakerOptions {
        &self.options
    }

    /// The CPU sampler's kernel and options (`None` on the GPU).
    pub fn cpu_sampler(&self) -> Option<(Kernel, SamplerOptions)> {
        match &self.backend {
            Backend::Cpu(s) => Some((s.kernel(), s.options())),
            Backend::Cuda(..) => None,
        }
    }

    /// The GPU kernel's plan (`None` on the CPU).
    pub fn gpu_plan(&self) -> Option<dv_gpu::SinglePlan> {
        match &self.backend {
            Backend::Cuda(_, plan) => Some(*plan),
            Backend::Cpu(_) => None,
        }
    }

    /// The device the sampler runs on.
    pub fn device(&self) -> Device {
        self.options.device
    }

    /// Where the lexicon in use came from, `None` for a package that cannot
    /// speak text.
    pub fn lexicon_source(&self) -> Option<&LexiconSource> {
        self.text.as_ref().map(|t| &t.lexicon_source)
    }

    /// The lexicon file in use: `None` for a package that cannot speak text,
    /// or when the lexicon is the CMUDict built into the binary.
    pub fn lexicon_path(&self) -> Option<&Path> {
        self.lexicon_source().and_then(LexiconSource::path)
    }

    /// Text → sentences with phoneme and word timings from the duration
    /// model; `speed` (0.25..=4.0) divides every predicted duration.
    ///
    /// Errors: [`SpeakError::NoDurationModel`] for a WaveNet-only package,
    /// [`SpeakError::OutOfVocabulary`] naming every word neither the lexicon
    /// nor a G2P model can pronounce, [`SpeakError::NothingToSay`] for text
    /// without words, [`SpeakError::BadOption`] for a speed out of range.
    pub fn plan(&self, text: &str, speed: f32) -> Result<Vec<Sentence>, SpeakError> {
        if !SPEED_RANGE.contains(&speed) {
            return Err(SpeakError::BadOption {
                what: "speed",
                reason: format!("{speed} is outside {}..={}", SPEED_RANGE.start(), SPEED_RANGE.end()),
            });
        }
        let t = self.text.as_ref().ok_or(SpeakError::NoDurationModel)?;
        let pronounced = pronounce(text, &t.lexicon, t.g2p.as_ref())?;
        if pronounced.is_empty() {
            return Err(SpeakError::NothingToSay);
        }
        pronounced
            .iter()
            .enumerate()
            .map(|(k, p)| plan_sentence(p, k, &t.duration, self.voice.config(), speed as f64))
            .collect()
    }

    /// A sentence of given conditioning frames (`[F, 227]` row-major at 256
    /// Hz, F ≥ 1, `dv_text::conditioning_features`), such as a corpus
    /// utterance's own phonemes, durations and F0 (the paper's Table 1
    /// setting): no timings, rendered with the seed of sentence `index`.
    pub fn sentence_from_frames(&self, text: &str, frames: Vec<f32>, index: usize) -> Result<Sentence, SpeakError> {
        Sentence::from_frames(text.to_string(), frames, index, self.voice.config())
    }
}
