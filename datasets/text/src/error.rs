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
    CorruptCmudict { reason: String },
}
