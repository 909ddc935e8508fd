//! The Parquet side of the format: reading a local output's shards and
//! [`rewrite`].

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use polars::prelude::*;

use super::{column, io, shard_files, SHARDS};
use crate::FeaturizeError;

/// One utterance's phones with their starts and ends (seconds).
pub type Phones = (Vec<String>, Vec<f64>, Vec<f64>);

/// What [`rewrite`] writes for one utterance: its phones, with their
/// starts and ends when known; `None` leaves it without phones.
pub type Relabel = Option<(Vec<String>, Option<(Vec<f64>, Vec<f64>)>)>;

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
    let to_shards = to.join(SHARDS);
    std::fs::create_dir_all(&to_shards).map_err(io("creating", &to_shards))?;
    for shard in shard_files(from)? {
        let mut df = read(&shard, None)?;
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
        let path = to_shards.join(shard.file_name().unwrap_or_default());
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
