/// Errors that stop a featurization job (a bad utterance never does: it is
/// reported in the shard's bad-item table), or a reading of its output.
/// Without the `job` feature only the variants that need no dependency exist.
#[derive(Debug, thiserror::Error)]
pub enum FeaturizeError {
    #[error("{url}: {reason}")]
    Url { url: String, reason: String },
    #[cfg(feature = "job")]
    #[error(transparent)]
    Store(#[from] dv_store::StoreError),
    #[cfg(feature = "job")]
    #[error("corpus: {0}")]
    Corpus(#[from] dv_corpus::CorpusError),
    #[cfg(feature = "job")]
    #[error("manifest: {0}")]
    Manifest(#[from] dv_manifest::ManifestError),
    #[cfg(feature = "job")]
    #[error("polars: {0}")]
    Polars(#[from] polars::prelude::PolarsError),
    #[cfg(feature = "job")]
    #[error("audio DSP: {0}")]
    Audio(#[from] dv_audio::AudioError),
    /// An utterance longer than [`crate::MAX_UTTERANCE_SECONDS`] (a bad item).
    #[error(
        "{}: {seconds:.1} s of audio, longer than the limit of {limit} s an utterance (MAX_UTTERANCE_SECONDS); \
         cut the recording into sentences",
        path.display()
    )]
    TooLong { path: std::path::PathBuf, seconds: f64, limit: f64 },
    #[error("{0}")]
    Shard(String),
    /// A file or directory of a local featurize output ([`crate::format`])
    /// that could not be read, written, copied or removed.
    #[error("{what} {}", path.display())]
    Io {
        what: &'static str,
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A Parquet file that could not be read.
    #[cfg(feature = "job")]
    #[error("{what} {}", path.display())]
    Parquet {
        what: &'static str,
        path: std::path::PathBuf,
        #[source]
        source: polars::prelude::PolarsError,
    },
    /// A shard that could not be written.
    #[cfg(feature = "job")]
    #[error("writing {}", path.display())]
    Write {
        path: std::path::PathBuf,
        #[source]
        source: dv_manifest::ManifestError,
    },
}
