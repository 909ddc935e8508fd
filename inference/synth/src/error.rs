use dv_voice::VoiceError;

/// Why synthesis cannot run. Variants name the buffer or option at fault.
#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    /// The voice package itself is invalid.
    #[error(transparent)]
    Voice(#[from] VoiceError),
    /// An input or output buffer of the wrong size.
    #[error("{what}: expected {expected} values, got {got}")]
    Shape { what: &'static str, expected: usize, got: usize },
    /// More samples asked for than the conditioning covers.
    #[error("{n_samples} samples asked for, but {frames} conditioning frames cover only {covered}")]
    TooLong { n_samples: usize, frames: usize, covered: usize },
    /// A kernel or option combination this build or CPU cannot run.
    #[error("unsupported: {what}")]
    Unsupported { what: String },
    /// An option value outside its domain (a temperature of 0, top-0).
    #[error("invalid {what}: {reason}")]
    InvalidOption { what: &'static str, reason: String },
    /// A non-finite value in an input (a NaN conditioning frame).
    #[error("{what}: non-finite value at flat index {index}")]
    NonFinite { what: &'static str, index: usize },
    /// An index outside its range (a phoneme or stress index the voice's
    /// inventory does not have), with its position in the input.
    #[error("{what} index {value} at position {position} is outside 0..{limit}")]
    OutOfRange { what: &'static str, position: usize, value: usize, limit: usize },
    /// The voice package lacks a model the call needs (a WaveNet-only
    /// package has no duration model).
    #[error("the voice package has no {what} model")]
    NoModel { what: &'static str },
    /// A character of a word that the G2P model has no grapheme for.
    #[error("word {word:?}: character {character:?} is not a letter the G2P model reads (a-z ' - .)")]
    Grapheme { word: String, character: char },
    /// A code outside 0..=255 in a teacher-forcing input, or a scratch made
    /// for another sampler.
    #[error("{what}: {reason}")]
    Mismatch { what: &'static str, reason: String },
}
