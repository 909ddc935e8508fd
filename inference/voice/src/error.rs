use std::path::PathBuf;

/// Why a voice package cannot be read or written. Every variant names the
/// file, key or tensor at fault.
#[derive(Debug, thiserror::Error)]
pub enum VoiceError {
    /// A file of the package is missing or unreadable, or cannot be written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `config.json` is not valid JSON of the expected types.
    #[error("{path}: invalid config: {reason}")]
    Config { path: PathBuf, reason: String },
    /// `config.json` has a key this reader does not know (a newer writer).
    #[error("{path}: unknown config key `{key}` (written by a newer format revision?)")]
    UnknownKey { path: PathBuf, key: String },
    /// A section or value that this reader knows of but does not support yet.
    #[error("unsupported {what}")]
    Unsupported { what: String },
    /// The package is not a voice package, or of another format version.
    #[error("not a voice package of version {expected}: format {format:?}, version {version}")]
    Version { format: String, version: u64, expected: u32 },
    /// A config value outside what the format allows.
    #[error("invalid config value {key}: {reason}")]
    InvalidValue { key: &'static str, reason: String },
    /// A safetensors file that cannot be parsed.
    #[error("{}: SHA-256 {got} differs from {expected} in SHA256SUMS: the file is corrupt or was changed after the package was written", path.display())]
    Checksum { path: PathBuf, expected: String, got: String },
    #[error("{path}: not a valid safetensors file: {reason}")]
    Safetensors { path: PathBuf, reason: String },
    /// A tensor the config requires is absent.
    #[error("missing tensor `{name}` (expected shape {expected:?})")]
    MissingTensor { name: String, expected: Vec<usize> },
    /// A tensor that the config does not call for.
    #[error("unexpected tensor `{name}` with shape {shape:?}")]
    UnexpectedTensor { name: String, shape: Vec<usize> },
    /// A tensor of the wrong shape.
    #[error("tensor `{name}`: expected shape {expected:?}, got {got:?}")]
    ShapeMismatch { name: String, expected: Vec<usize>, got: Vec<usize> },
    /// A tensor whose data length does not match its shape.
    #[error("tensor `{name}`: shape {shape:?} needs {expected} values, got {got}")]
    DataLength { name: String, shape: Vec<usize>, expected: usize, got: usize },
    /// A tensor of a dtype other than float32.
    #[error("tensor `{name}`: dtype {dtype}, expected F32 or F16")]
    Dtype { name: String, dtype: String },
    /// A tensor holding NaN or infinity.
    #[error("tensor `{name}`: non-finite value at flat index {index}")]
    NonFinite { name: String, index: usize },
    /// A golden tensor whose values break its contract (codes outside 0..=255,
    /// more samples than frames cover).
    #[error("{name:?} is not a voice name (letters, digits, '-', '_' and '.', not starting with '.')")]
    VoiceName { name: String },

    #[error("no voice {name:?} in {} (known voices: {}); DV_VOICES adds folders of voice packages, and a package's directory can be given as a path", display_paths(searched), if known.is_empty() { "none".to_string() } else { known.join(", ") })]
    VoiceNotFound { name: String, searched: Vec<PathBuf>, known: Vec<String> },

    #[error("golden tensor `{name}`: {reason}")]
    Golden { name: String, reason: String },
}

fn display_paths(p: &[PathBuf]) -> String {
    p.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}
