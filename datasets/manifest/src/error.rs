use std::path::PathBuf;

/// Errors of the manifest crate.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("polars: {0}")]
    Polars(#[from] polars::prelude::PolarsError),
    #[error("cannot write or read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A Parquet file that is not a manifest of this schema.
    #[error("{column}: {reason}")]
    Schema { column: String, reason: String },
}
