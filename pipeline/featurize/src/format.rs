//! The featurize output's format, owned here: its layout (the crate docs'
//! table), the columns' names (the crate docs' schemas), the listing of a
//! local output's shards and, with the `job` feature, their reading and
//! [`rewrite`], a copy of an output with other reference phones.
//!
//! The layout, the names and the listing need no polars: a crate that reads
//! the shards its own way (dv-train) depends on this crate with
//! `default-features = false` and finds them here.

use std::path::{Path, PathBuf};

use crate::FeaturizeError;

#[cfg(feature = "job")]
mod parquet;
#[cfg(feature = "job")]
pub use parquet::{first_id, read_phones, read_reference, rewrite, Phones, Relabel};

/// The features, one Parquet object per shard.
pub const SHARDS: &str = "shards";
/// The §4.4 chunk index, one object per shard.
pub const CHUNKS: &str = "chunks";
/// The utterances skipped, one object per shard.
pub const BAD: &str = "bad";
/// Each shard's counts (JSON).
pub const REPORTS: &str = "reports";
/// Written once every shard exists.
pub const MANIFEST: &str = "manifest.json";

/// The feature columns (the crate docs' schema).
pub mod column {
    pub const ID: &str = "id";
    pub const SPEAKER: &str = "speaker";
    pub const SAMPLE_RATE: &str = "sample_rate";
    pub const SAMPLES: &str = "samples";
    pub const DURATION: &str = "duration";
    pub const MULAW: &str = "mulaw";
    pub const MFCC: &str = "mfcc";
    pub const MFCC_FRAMES: &str = "mfcc_frames";
    pub const F0_HZ: &str = "f0_hz";
    pub const F0_START: &str = "f0_start";
    pub const REF_PHONES: &str = "ref_phones";
    pub const REF_PHONE_STARTS: &str = "ref_phone_starts";
    pub const REF_PHONE_ENDS: &str = "ref_phone_ends";
}

/// The chunk index's columns (`chunks/*.parquet`, the crate docs).
pub mod chunk_column {
    pub const ID: &str = "id";
    pub const CHUNK: &str = "chunk";
    pub const WINDOW_START: &str = "window_start";
    pub const WINDOW_SAMPLES: &str = "window_samples";
    pub const CONTEXT_SAMPLES: &str = "context_samples";
    pub const TARGET_SAMPLES: &str = "target_samples";
}

/// Shard `i` of `n`'s name, without directory or extension
/// (`shard-IIIII-of-NNNNN`).
pub fn shard_name(i: usize, n: usize) -> String {
    format!("shard-{i:05}-of-{n:05}")
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> FeaturizeError + 'a {
    move |source| FeaturizeError::Io { what, path: path.to_path_buf(), source }
}

/// The local directory of a featurize output given as a path or a
/// `file://` URL, the one parser of that form (dv-train's `[data] url` is
/// read through it). Any other URL (`s3://…`: the job writes there, but
/// its output is read only from a local directory for now) is a
/// [`FeaturizeError::Url`] naming it.
pub fn local_root(features: &Path) -> Result<PathBuf, FeaturizeError> {
    let s = features.to_string_lossy();
    match s.strip_prefix("file://") {
        Some(p) => Ok(PathBuf::from(p)),
        None if s.contains("://") => Err(FeaturizeError::Url {
            url: s.into_owned(),
            reason: "only local featurize outputs (a path or file://) are read for now".into(),
        }),
        None => Ok(features.to_path_buf()),
    }
}

/// The `*.parquet` objects in `dir` ([`SHARDS`], [`CHUNKS`] or [`BAD`]) of
/// a local featurize output (a directory or `file://` URL, [`local_root`]),
/// in name order. A directory that cannot be read is an
/// [`FeaturizeError::Io`] naming it; an empty one is an empty list.
pub fn parquet_files(features: &Path, dir: &str) -> Result<Vec<PathBuf>, FeaturizeError> {
    let dir = local_root(features)?.join(dir);
    let mut files = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(io("reading", &dir))? {
        let p = e.map_err(io("reading", &dir))?.path();
        if p.extension().is_some_and(|x| x == "parquet") {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}

/// The feature shards ([`SHARDS`]) of a local featurize output, in name
/// order ([`parquet_files`]).
pub fn shard_files(features: &Path) -> Result<Vec<PathBuf>, FeaturizeError> {
    parquet_files(features, SHARDS)
}

/// The chunk index ([`CHUNKS`]) of a local featurize output, one file per
/// shard, in name order ([`parquet_files`]).
pub fn chunk_files(features: &Path) -> Result<Vec<PathBuf>, FeaturizeError> {
    parquet_files(features, CHUNKS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_root_reads_a_path_or_a_file_url_and_names_any_other_url() {
        assert_eq!(local_root(Path::new("/data/features")).unwrap(), Path::new("/data/features"));
        assert_eq!(local_root(Path::new("features")).unwrap(), Path::new("features"));
        assert_eq!(local_root(Path::new("file:///data/features")).unwrap(), Path::new("/data/features"));
        let e = local_root(Path::new("s3://bucket/features")).unwrap_err();
        assert!(matches!(&e, FeaturizeError::Url { url, .. } if url == "s3://bucket/features"), "{e:?}");
        assert_eq!(
            e.to_string(),
            "s3://bucket/features: only local featurize outputs (a path or file://) are read for now"
        );
        // parquet_files lists nothing from it, and says why.
        assert!(matches!(shard_files(Path::new("gs://b/f")), Err(FeaturizeError::Url { .. })));
    }
}
