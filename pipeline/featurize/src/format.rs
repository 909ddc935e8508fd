//! The featurize output's format, owned here: its layout (the crate docs'
//! table), the feature columns' names (the crate docs' schema), the
//! listing and reading of a local output's shards, and [`rewrite`], a copy
//! of an output with other reference phones.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::FeaturizeError;

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

/// Shard `i` of `n`'s name, without directory or extension
/// (`shard-IIIII-of-NNNNN`).
pub fn shard_name(i: usize, n: usize) -> String {
    format!("shard-{i:05}-of-{n:05}")
}

/// One utterance's phones with their starts and ends (seconds).
pub type Phones = (Vec<String>, Vec<f64>, Vec<f64>);

/// What [`rewrite`] writes for one utterance: its phones, with their
/// starts and ends when known; `None` leaves it without phones.
pub type Relabel = Option<(Vec<String>, Option<(Vec<f64>, Vec<f64>)>)>;

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> FeaturizeError + 'a {
    move |source| FeaturizeError::Io { what, path: path.to_path_buf(), source }
}

/// The feature shards of a local featurize output (a directory or
/// `file://` URL), in name order.
pub fn shard_files(features: &Path) -> Result<Vec<PathBuf>, FeaturizeError> {
    let features = features.to_string_lossy();
    let dir = Path::new(features.strip_prefix("file://").unwrap_or(&features)).join(SHARDS);
    let mut shards: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(io("reading", &dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    shards.sort();
    Ok(shards)
}

/// A Parquet file, whole or only `columns`.
fn read(path: &Path, columns: Option<&[&str]>) -> Result<DataFrame, FeaturizeError> {
    let file = File::open(path).map_err(io("opening", path))?;
    let reader = ParquetReader::new(file).with_columns(columns.map(|c| c.iter().map(|s| s.to_string()).collect()));
    reader.finish().map_err(|source| FeaturizeError::Parquet { what: "reading", path: path.to_path_buf(), source })
}

/// The first utterance id in a featurize output's shards; `None` when they
/// hold no utterance.
pub fn first_id(features: &Path) -> Result<Option<String>, FeaturizeError> {
    for shard in shard_files(features)? {
        let df = read(&shard, Some(&[column::ID]))?;
        if let Some(id) = df.column(column::ID)?.str()?.get(0) {
            return Ok(Some(id.to_string()));
        }
    }
    Ok(None)
}

/// The reference phones and times in a featurize output's shards by
/// utterance id; utterances without them (a corpus of audio and text) are
/// left out.
pub fn read_reference(features: &Path) -> Result<HashMap<String, Phones>, FeaturizeError> {
    let mut out = HashMap::new();
    let cols = [column::REF_PHONES, column::REF_PHONE_STARTS, column::REF_PHONE_ENDS];
    for shard in shard_files(features)? {
        out.extend(read_phones(&shard, cols, None)?);
    }
    Ok(out)
}

/// `id` plus the phones, starts and ends columns `cols` of a Parquet file,
/// by id; rows with a null or no phone in any of them (or true in the
/// boolean column `skip`) are left out. A featurize shard's reference
/// phones, or an aligner's output.
pub fn read_phones(
    path: &Path,
    cols: [&str; 3],
    skip: Option<&str>,
) -> Result<HashMap<String, Phones>, FeaturizeError> {
    let df = read(path, None)?;
    let ids = df.column(column::ID)?.str()?.clone();
    let phones = df.column(cols[0])?.list()?.clone();
    let starts = df.column(cols[1])?.list()?.clone();
    let ends = df.column(cols[2])?.list()?.clone();
    let skipped = skip.and_then(|c| df.column(c).ok().and_then(|c| c.bool().ok().cloned()));
    let floats = |l: &ListChunked, i: usize| -> Option<Vec<f64>> { l.get_as_series(i)?.f64().ok()?.iter().collect() };
    let mut out = HashMap::new();
    for i in 0..df.height() {
        if skipped.as_ref().and_then(|q| q.get(i)).unwrap_or(false) {
            continue;
        }
        let Some(id) = ids.get(i) else { continue };
        let p: Option<Vec<String>> = phones
            .get_as_series(i)
            .and_then(|s| s.str().ok().and_then(|c| c.iter().map(|x| x.map(String::from)).collect()));
        if let (Some(p), Some(s), Some(e)) = (p, floats(&starts, i), floats(&ends, i)) {
            if !p.is_empty() {
                out.insert(id.to_string(), (p, s, e));
            }
        }
    }
    Ok(out)
}

fn list_of<T>(name: &str, inner: DataType, rows: impl Iterator<Item = Option<Vec<T>>>) -> Result<Column, FeaturizeError>
where
    Series: NamedFrom<Vec<T>, [T]>,
{
    let ca: ListChunked = rows.map(|r| r.map(|v| Series::new(PlSmallStr::EMPTY, v))).collect();
    Ok(ca.into_series().cast(&DataType::List(Box::new(inner)))?.with_name(name.into()).into_column())
}

/// Copies the local featurize output `from` to `to` (replacing it) with
/// each shard's reference phone columns set by `phones(id)`; everything
/// but the shards (`chunks/`, `manifest.json`, …) is copied as it is.
/// Returns (utterances with phones, without).
pub fn rewrite(from: &Path, to: &Path, phones: &dyn Fn(&str) -> Relabel) -> Result<(usize, usize), FeaturizeError> {
    if to.exists() {
        std::fs::remove_dir_all(to).map_err(io("removing", to))?;
    }
    copy_except_shards(from, to)?;
    let (mut with, mut without) = (0, 0);
    let (shards, to_shards) = (from.join(SHARDS), to.join(SHARDS));
    std::fs::create_dir_all(&to_shards).map_err(io("creating", &to_shards))?;
    let mut names: Vec<_> = std::fs::read_dir(&shards)
        .map_err(io("reading", &shards))?
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .filter(|n| n.to_string_lossy().ends_with(".parquet"))
        .collect();
    names.sort();
    for name in names {
        let mut df = read(&shards.join(&name), None)?;
        let ids: Vec<String> =
            df.column(column::ID)?.str()?.iter().map(|s| s.unwrap_or_default().to_string()).collect();
        let rows: Vec<Relabel> = ids.iter().map(|id| phones(id)).collect();
        with += rows.iter().filter(|r| r.is_some()).count();
        without += rows.iter().filter(|r| r.is_none()).count();
        let names =
            list_of(column::REF_PHONES, DataType::String, rows.iter().map(|r| r.as_ref().map(|(p, _)| p.clone())))?;
        let starts = list_of(
            column::REF_PHONE_STARTS,
            DataType::Float64,
            rows.iter().map(|r| r.as_ref().and_then(|(_, t)| t.as_ref().map(|t| t.0.clone()))),
        )?;
        let ends = list_of(
            column::REF_PHONE_ENDS,
            DataType::Float64,
            rows.iter().map(|r| r.as_ref().and_then(|(_, t)| t.as_ref().map(|t| t.1.clone()))),
        )?;
        df.with_column(names)?;
        df.with_column(starts)?;
        df.with_column(ends)?;
        let path = to_shards.join(&name);
        dv_manifest::write_parquet(&mut df, &path)
            .map_err(|source| FeaturizeError::Write { path: path.clone(), source })?;
    }
    Ok((with, without))
}

fn copy_except_shards(from: &Path, to: &Path) -> Result<(), FeaturizeError> {
    std::fs::create_dir_all(to).map_err(io("creating", to))?;
    for e in std::fs::read_dir(from).map_err(io("reading", from))? {
        let e = e.map_err(io("reading", from))?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().map_err(io("reading", &src))?.is_dir() {
            if e.file_name() != SHARDS {
                copy_except_shards(&src, &dst)?;
            }
        } else {
            std::fs::copy(&src, &dst).map_err(io("copying", &src))?;
        }
    }
    Ok(())
}
