//! Utterances to and from a Polars `DataFrame`, and Parquet I/O.

use std::fs::File;
use std::path::Path;

use dv_corpus::{BadItem, F0Track, PhoneSpan, ReferenceLabels, Utterance};
use polars::prelude::*;

use crate::ManifestError;

fn list_of(inner: DataType) -> DataType {
    DataType::List(Box::new(inner))
}

/// The manifest schema (see the crate docs for the meaning of each column).
pub fn schema() -> Schema {
    let fields = [
        ("id", DataType::String),
        ("speaker", DataType::String),
        ("audio", DataType::String),
        ("transcript", DataType::String),
        ("normalized", DataType::String),
        ("sample_rate", DataType::UInt32),
        ("channels", DataType::UInt32),
        ("samples", DataType::UInt64),
        ("duration", DataType::Float64),
        ("ref_phones", list_of(DataType::String)),
        ("ref_phone_starts", list_of(DataType::Float64)),
        ("ref_phone_ends", list_of(DataType::Float64)),
        ("ref_f0_start", DataType::Float64),
        ("ref_f0_step", DataType::Float64),
        ("ref_f0_hz", list_of(DataType::Float32)),
    ];
    Schema::from_iter(fields.into_iter().map(|(n, t)| Field::new(n.into(), t)))
}

/// A list column: one optional inner series per row, cast to `inner` so the
/// dtype holds even when every row is null.
fn list_column<T, F>(name: &str, utts: &[Utterance], inner: DataType, f: F) -> Result<Column, ManifestError>
where
    F: Fn(&ReferenceLabels) -> Option<Vec<T>>,
    Series: NamedFrom<Vec<T>, [T]>,
{
    let ca: ListChunked =
        utts.iter().map(|u| u.reference.as_ref().and_then(&f).map(|v| Series::new(PlSmallStr::EMPTY, v))).collect();
    let s = ca.into_series().cast(&list_of(inner))?.with_name(name.into());
    Ok(s.into_column())
}

/// The manifest of a list of utterances.
pub fn utterances_frame(utts: &[Utterance]) -> Result<DataFrame, ManifestError> {
    let str_col =
        |name: &str, f: &dyn Fn(&Utterance) -> &str| Column::new(name.into(), utts.iter().map(f).collect::<Vec<_>>());
    let phones = |r: &ReferenceLabels| {
        (!r.phones.is_empty()).then(|| r.phones.iter().map(|p| p.phone.clone()).collect::<Vec<String>>())
    };
    let starts =
        |r: &ReferenceLabels| (!r.phones.is_empty()).then(|| r.phones.iter().map(|p| p.start).collect::<Vec<f64>>());
    let ends =
        |r: &ReferenceLabels| (!r.phones.is_empty()).then(|| r.phones.iter().map(|p| p.end).collect::<Vec<f64>>());
    let columns = vec![
        str_col("id", &|u| &u.id),
        str_col("speaker", &|u| &u.speaker),
        str_col("audio", &|u| &u.audio),
        str_col("transcript", &|u| &u.transcript),
        str_col("normalized", &|u| &u.normalized),
        Column::new("sample_rate".into(), utts.iter().map(|u| u.sample_rate).collect::<Vec<u32>>()),
        Column::new("channels".into(), utts.iter().map(|u| u.channels as u32).collect::<Vec<u32>>()),
        Column::new("samples".into(), utts.iter().map(|u| u.samples).collect::<Vec<u64>>()),
        Column::new("duration".into(), utts.iter().map(|u| u.duration).collect::<Vec<f64>>()),
        list_column("ref_phones", utts, DataType::String, phones)?,
        list_column("ref_phone_starts", utts, DataType::Float64, starts)?,
        list_column("ref_phone_ends", utts, DataType::Float64, ends)?,
        Column::new(
            "ref_f0_start".into(),
            utts.iter().map(|u| f0_of(u).map(|t| t.start)).collect::<Vec<Option<f64>>>(),
        ),
        Column::new("ref_f0_step".into(), utts.iter().map(|u| f0_of(u).map(|t| t.step)).collect::<Vec<Option<f64>>>()),
        list_column("ref_f0_hz", utts, DataType::Float32, |r| r.f0.as_ref().map(|t| t.hz.clone()))?,
    ];
    Ok(DataFrame::new(utts.len(), columns)?)
}

fn f0_of(u: &Utterance) -> Option<&F0Track> {
    u.reference.as_ref().and_then(|r| r.f0.as_ref())
}

fn schema_err(column: &str, reason: impl Into<String>) -> ManifestError {
    ManifestError::Schema { column: column.into(), reason: reason.into() }
}

/// Reads utterances back from a manifest frame, checking its schema.
pub fn utterances_from_frame(df: &DataFrame) -> Result<Vec<Utterance>, ManifestError> {
    let want = schema();
    for (name, dtype) in want.iter() {
        let col = df.column(name).map_err(|_| schema_err(name, "column missing"))?;
        if col.dtype() != dtype {
            return Err(schema_err(name, format!("expected {dtype}, found {}", col.dtype())));
        }
    }
    let s = |n: &str| df.column(n).and_then(|c| c.str().cloned());
    let (id, speaker, audio, transcript, normalized) =
        (s("id")?, s("speaker")?, s("audio")?, s("transcript")?, s("normalized")?);
    let rate = df.column("sample_rate")?.u32()?.clone();
    let channels = df.column("channels")?.u32()?.clone();
    let samples = df.column("samples")?.u64()?.clone();
    let duration = df.column("duration")?.f64()?.clone();
    let phones = df.column("ref_phones")?.list()?.clone();
    let starts = df.column("ref_phone_starts")?.list()?.clone();
    let ends = df.column("ref_phone_ends")?.list()?.clone();
    let f0_start = df.column("ref_f0_start")?.f64()?.clone();
    let f0_step = df.column("ref_f0_step")?.f64()?.clone();
    let f0_hz = df.column("ref_f0_hz")?.list()?.clone();
    let req = |name: &str, i: usize| schema_err(name, format!("null in row {i}"));
    let mut out = Vec::with_capacity(df.height());
    for i in 0..df.height() {
        let mut reference = ReferenceLabels::default();
        if let (Some(p), Some(st), Some(en)) = (phones.get_as_series(i), starts.get_as_series(i), ends.get_as_series(i))
        {
            let (p, st, en) = (p.str()?.clone(), st.f64()?.clone(), en.f64()?.clone());
            if p.len() != st.len() || p.len() != en.len() {
                return Err(schema_err("ref_phones", format!("row {i}: phones, starts and ends differ in length")));
            }
            for k in 0..p.len() {
                reference.phones.push(PhoneSpan {
                    phone: p.get(k).ok_or_else(|| req("ref_phones", i))?.to_string(),
                    start: st.get(k).ok_or_else(|| req("ref_phone_starts", i))?,
                    end: en.get(k).ok_or_else(|| req("ref_phone_ends", i))?,
                });
            }
        }
        if let (Some(start), Some(step), Some(hz)) = (f0_start.get(i), f0_step.get(i), f0_hz.get_as_series(i)) {
            let hz = hz.f32()?.iter().map(|v| v.unwrap_or(0.0)).collect();
            reference.f0 = Some(F0Track { start, step, hz });
        }
        let has_reference = !reference.phones.is_empty() || reference.f0.is_some();
        out.push(Utterance {
            id: id.get(i).ok_or_else(|| req("id", i))?.to_string(),
            speaker: speaker.get(i).ok_or_else(|| req("speaker", i))?.to_string(),
            audio: audio.get(i).ok_or_else(|| req("audio", i))?.to_string(),
            transcript: transcript.get(i).ok_or_else(|| req("transcript", i))?.to_string(),
            normalized: normalized.get(i).ok_or_else(|| req("normalized", i))?.to_string(),
            sample_rate: rate.get(i).ok_or_else(|| req("sample_rate", i))?,
            channels: u16::try_from(channels.get(i).ok_or_else(|| req("channels", i))?)
                .map_err(|_| schema_err("channels", format!("row {i}: more than 65535 channels")))?,
            samples: samples.get(i).ok_or_else(|| req("samples", i))?,
            duration: duration.get(i).ok_or_else(|| req("duration", i))?,
            reference: has_reference.then_some(reference),
        });
    }
    Ok(out)
}

/// The bad-item report as a frame: `item`, `file`, `reason`, `detail`.
pub fn bad_items_frame(bad: &[BadItem]) -> Result<DataFrame, ManifestError> {
    let col = |name: &str, f: &dyn Fn(&BadItem) -> String| {
        Column::new(name.into(), bad.iter().map(f).collect::<Vec<String>>())
    };
    let columns = vec![
        col("item", &|b| b.item.clone()),
        col("file", &|b| b.file.to_string_lossy().into_owned()),
        col("reason", &|b| b.reason.as_str().to_string()),
        col("detail", &|b| b.detail.clone()),
    ];
    Ok(DataFrame::new(bad.len(), columns)?)
}

/// Writes a frame as Parquet (zstd), atomically: a temporary file in the same
/// directory, synced, then renamed over `path`.
pub fn write_parquet(df: &mut DataFrame, path: &Path) -> Result<(), ManifestError> {
    let io = |source| ManifestError::Io { path: path.to_path_buf(), source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = path.with_extension("parquet.partial");
    let file = File::create(&tmp).map_err(io)?;
    let result = ParquetWriter::new(&file).with_compression(ParquetCompression::Zstd(None)).finish(df);
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.into());
    }
    file.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// Reads a Parquet file into a frame.
pub fn read_parquet(path: &Path) -> Result<DataFrame, ManifestError> {
    let file = File::open(path).map_err(|source| ManifestError::Io { path: path.to_path_buf(), source })?;
    Ok(ParquetReader::new(file).finish()?)
}
