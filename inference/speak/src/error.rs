use std::path::PathBuf;

/// Why text could not become audio. Each variant says what the caller can
/// change: the text, the package, an option, or nothing (cancelled).
#[derive(Debug, thiserror::Error)]
pub enum SpeakError {
    /// The package has no duration/F0 model, so it cannot time phonemes:
    /// it can only render conditioning frames given to it
    /// ([`crate::Speaker::sentence_from_frames`]).
    #[error(
        "this voice package has no duration/F0 model, so it cannot speak text: export it with \
         `dv export --duration CKPT`"
    )]
    NoDurationModel,
    /// Words that neither the lexicon nor a G2P model can pronounce (the
    /// package has no G2P model), in the order of the text.
    #[error(
        "{} word(s) not in the lexicon: {} (this voice package has no grapheme-to-phoneme model for such words: \
         add one with `dv export --voice V --g2p CKPT`, spell them out, or add them to the lexicon)",
        words.len(),
        words.join(" ")
    )]
    OutOfVocabulary { words: Vec<String> },
    /// The text has no word to speak (empty, or only punctuation, symbols
    /// and emoji). Digits are words (`42` is `forty two`).
    #[error("nothing to say: the text has no letters or digits to speak (only spaces, punctuation, symbols or emoji)")]
    NothingToSay,
    /// The caller's [`crate::CancelToken`] was set during rendering.
    #[error("cancelled")]
    Cancelled,
    /// A model of the package does not reproduce the golden outputs its
    /// trainer saved (a corrupt package, or one from a different network
    /// definition): the package is refused.
    #[error("{}: the {model} golden outputs do not match ({detail})", dir.display())]
    GoldenMismatch { dir: PathBuf, model: &'static str, detail: crate::ParityMiss },
    /// A G2P output that is no phoneme of the inventory.
    #[error("G2P output (phoneme {phoneme}, stress {stress}) for {word:?} is not a phoneme")]
    BadPronunciation { word: String, phoneme: usize, stress: usize },
    /// An option outside its domain (a speed of 10, a block of 0, an unknown
    /// sampling mode or device).
    #[error("{what}: {reason}")]
    BadOption { what: &'static str, reason: String },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The voice package is invalid.
    #[error(transparent)]
    Voice(#[from] dv_voice::VoiceError),
    /// The voice package in `dir` could not be read: the error names the
    /// package, whatever the check that refused it (a tensor's shape names
    /// only the tensor).
    #[error("voice package {}: {source}", dir.display())]
    Package {
        dir: PathBuf,
        #[source]
        source: dv_voice::VoiceError,
    },
    /// The CPU networks or sampler refused an input or option.
    #[error(transparent)]
    Synth(#[from] dv_synth::SynthError),
    /// The GPU sampler is unavailable or failed.
    #[error(transparent)]
    Gpu(#[from] dv_gpu::GpuError),
    /// The lexicon could not be found or read.
    #[error(transparent)]
    Text(#[from] dv_text::TextError),
    /// Timed phonemes the conditioning frames cannot be built from.
    #[error(transparent)]
    Conditioning(#[from] dv_text::ConditioningError),
}
