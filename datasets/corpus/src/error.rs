use std::path::PathBuf;

/// Errors that stop a whole corpus: its index cannot be found or read. Bad
/// items inside a readable corpus are [`crate::BadItem`]s, not errors.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("{path}: no such file or directory")]
    NotFound { path: PathBuf },
    #[error("{path}: not a corpus layout this reader knows (looked for {looked_for})")]
    Unrecognized { path: PathBuf, looked_for: String },
    #[error("{path}: expected a {kind} corpus: {reason}")]
    WrongLayout { path: PathBuf, kind: &'static str, reason: String },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{url}: {reason}")]
    UnsupportedUrl { url: String, reason: String },
    /// The recipe of the embedded corpus needs a tool or file it cannot find.
    #[error("{what} not found at {path}; install the Debian package `{package}`")]
    MissingTool { what: String, path: PathBuf, package: String },
    /// An external tool of the recipe failed.
    #[error("`{command}` failed: {reason}")]
    ToolFailed { command: String, reason: String },
    /// A line of `hts_engine`'s phone durations (`-od`) that does not parse
    /// (`line` counts from 1).
    #[error("{}: line {line}: {reason}", path.display())]
    Durations { path: PathBuf, line: usize, reason: String },
    #[error("{0}")]
    Recipe(String),
}

impl CorpusError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> CorpusError {
        let path = path.into();
        move |source| CorpusError::Io { path, source }
    }
}
