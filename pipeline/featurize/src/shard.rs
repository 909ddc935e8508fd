//! A shard's features, chunk index and report as Parquet bytes.

use dv_corpus::BadItem;
use polars::prelude::*;

use crate::format::{chunk_column, column};
use crate::{FeaturizeError, UtteranceFeatures};

fn list_f32(name: &str, rows: impl Iterator<Item = Option<Vec<f32>>>) -> Result<Column, FeaturizeError> {
    let ca: ListChunked = rows.map(|r| r.map(|v| Series::new(PlSmallStr::EMPTY, v))).collect();
    Ok(ca.into_series().cast(&DataType::List(Box::new(DataType::Float32)))?.with_name(name.into()).into_column())
}

fn list_of<T>(name: &str, inner: DataType, rows: impl Iterator<Item = Option<Vec<T>>>) -> Result<Column, FeaturizeError>
where
    Series: NamedFrom<Vec<T>, [T]>,
{
    let ca: ListChunked = rows.map(|r| r.map(|v| Series::new(PlSmallStr::EMPTY, v))).collect();
    Ok(ca.into_series().cast(&DataType::List(Box::new(inner)))?.with_name(name.into()).into_column())
}

fn phones(r: &UtteranceFeatures) -> Option<&Vec<dv_corpus::PhoneSpan>> {
    r.reference.as_ref().filter(|x| !x.phones.is_empty()).map(|x| &x.phones)
}

/// The feature rows of a shard (schema in the crate docs).
pub(crate) fn features_frame(rows: &[UtteranceFeatures]) -> Result<DataFrame, FeaturizeError> {
    let n = rows.len();
    let mulaw: BinaryChunked = rows.iter().map(|r| Some(r.mulaw.as_slice())).collect();
    let columns = vec![
        Column::new(column::ID.into(), rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>()),
        Column::new(column::SPEAKER.into(), rows.iter().map(|r| r.speaker.as_str()).collect::<Vec<_>>()),
        Column::new(column::SAMPLE_RATE.into(), rows.iter().map(|r| r.sample_rate).collect::<Vec<u32>>()),
        Column::new(column::SAMPLES.into(), rows.iter().map(|r| r.mulaw.len() as u64).collect::<Vec<u64>>()),
        Column::new(column::DURATION.into(), rows.iter().map(|r| r.duration()).collect::<Vec<f64>>()),
        mulaw.into_series().with_name(column::MULAW.into()).into_column(),
        list_f32(column::MFCC, rows.iter().map(|r| Some(r.mfcc.clone())))?,
        Column::new(column::MFCC_FRAMES.into(), rows.iter().map(|r| r.mfcc_frames as u32).collect::<Vec<u32>>()),
        list_f32(column::F0_HZ, rows.iter().map(|r| Some(r.f0_hz.clone())))?,
        Column::new(column::F0_START.into(), rows.iter().map(|r| r.f0_start).collect::<Vec<f64>>()),
        list_of(
            column::REF_PHONES,
            DataType::String,
            rows.iter().map(|r| phones(r).map(|p| p.iter().map(|s| s.phone.clone()).collect::<Vec<String>>())),
        )?,
        list_of(
            column::REF_PHONE_STARTS,
            DataType::Float64,
            rows.iter().map(|r| phones(r).map(|p| p.iter().map(|s| s.start).collect::<Vec<f64>>())),
        )?,
        list_of(
            column::REF_PHONE_ENDS,
            DataType::Float64,
            rows.iter().map(|r| phones(r).map(|p| p.iter().map(|s| s.end).collect::<Vec<f64>>())),
        )?,
    ];
    Ok(DataFrame::new(n, columns)?)
}

/// The chunk index of a shard.
pub(crate) fn chunks_frame(rows: &[UtteranceFeatures]) -> Result<DataFrame, FeaturizeError> {
    let all: Vec<(&str, &dv_audio::Chunk)> =
        rows.iter().flat_map(|r| r.chunks.iter().map(move |c| (r.id.as_str(), c))).collect();
    let columns = vec![
        Column::new(chunk_column::ID.into(), all.iter().map(|(id, _)| *id).collect::<Vec<_>>()),
        Column::new(chunk_column::CHUNK.into(), all.iter().map(|(_, c)| c.index as u32).collect::<Vec<u32>>()),
        Column::new(chunk_column::WINDOW_START.into(), all.iter().map(|(_, c)| c.window_start).collect::<Vec<i64>>()),
        Column::new(
            chunk_column::WINDOW_SAMPLES.into(),
            all.iter().map(|(_, c)| c.window_samples as u32).collect::<Vec<u32>>(),
        ),
        Column::new(
            chunk_column::CONTEXT_SAMPLES.into(),
            all.iter().map(|(_, c)| c.context_samples as u32).collect::<Vec<u32>>(),
        ),
        Column::new(
            chunk_column::TARGET_SAMPLES.into(),
            all.iter().map(|(_, c)| c.target_samples as u32).collect::<Vec<u32>>(),
        ),
    ];
    Ok(DataFrame::new(all.len(), columns)?)
}

/// Parquet bytes of a frame (zstd).
pub(crate) fn parquet_bytes(df: &mut DataFrame) -> Result<Vec<u8>, FeaturizeError> {
    let mut buf = Vec::new();
    ParquetWriter::new(&mut buf).with_compression(ParquetCompression::Zstd(None)).finish(df)?;
    Ok(buf)
}

/// Bad items of a shard as Parquet bytes.
pub(crate) fn bad_bytes(bad: &[BadItem]) -> Result<Vec<u8>, FeaturizeError> {
    parquet_bytes(&mut dv_manifest::bad_items_frame(bad)?)
}
