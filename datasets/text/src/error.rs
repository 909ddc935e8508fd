use std::path::PathBuf;

/// Errors of the text front end. Every variant names what the caller can fix.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    /// A lexicon or label file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A line of a lexicon file does not parse.
    #[error("{path}:{line}: {reason}")]
    MalformedLexicon { path: PathBuf, line: usize, reason: String },
    /// A phoneme symbol outside the inventory of Deep Voice App. A.3.
    #[error("unknown phoneme symbol {symbol:?}")]
    UnknownPhoneme { symbol: String },
    /// CMUDict was not found where it was looked for.
    #[error("CMUDict not found: {reason} (unset DV_CMUDICT to use the built-in CMUDict)")]
    CmudictNotFound { reason: String },
    /// The CMUDict built into the binary does not inflate or does not match
    /// its digest: the binary is damaged.
    #[error("the built-in CMUDict is damaged: {reason} (rebuild, or set DV_CMUDICT to a cmudict.dict file)")]
    CorruptCmudict { reason: CmudictDamage },
}

/// How the built-in CMUDict is damaged ([`TextError::CorruptCmudict`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CmudictDamage {
    /// The zlib stream does not inflate.
    #[error("cannot inflate it: {0}")]
    Inflate(String),
    /// The inflated text is not the release it should be.
    #[error("its SHA-256 is {got}, not {want}")]
    Digest { got: String, want: &'static str },
    /// The inflated text is not UTF-8.
    #[error("it is not UTF-8: {0}")]
    NotUtf8(String),
}
