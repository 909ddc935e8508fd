use std::path::PathBuf;

/// Why an audio file cannot be used. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    /// The file is missing or unreadable.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a well-formed audio file of the claimed container.
    #[error("{path}: not a valid audio file: {reason}")]
    Malformed { path: PathBuf, reason: String },
    /// The header declares more audio than the file holds.
    #[error("{path}: truncated: header declares {declared} bytes of audio, file holds {available}")]
    Truncated { path: PathBuf, declared: u64, available: u64 },
    /// The file holds no audio frames.
    #[error("{path}: no audio (zero frames)")]
    Empty { path: PathBuf },
    /// Sample-rate conversion could not be set up.
    #[error("cannot resample {from} Hz to {to} Hz: {reason}")]
    Resample { from: u32, to: u32, reason: String },
    /// A DSP configuration that cannot work (an FFT shorter than its window, say).
    #[error("invalid {what}: {reason}")]
    Config { what: &'static str, reason: String },
    /// A well-formed file in a format this crate does not read.
    #[error("{path}: unsupported audio format: {what}")]
    Unsupported { path: PathBuf, what: String },
}
