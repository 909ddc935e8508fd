//! Bytes on the wire: PCM, WAV (streamed or sized), FLAC (`flacenc`, pure
//! Rust) and server-sent events.

use base64::Engine;
use bytes::Bytes;
use flacenc::component::BitRepr;
use flacenc::error::Verify;

use crate::error::ApiError;

/// 16-bit little-endian samples.
pub(crate) fn pcm_bytes(pcm: &[i16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pcm.len() * 2);
    for v in pcm {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// A whole 16-bit mono WAV with its sizes.
pub(crate) fn wav(pcm: &[i16], rate: u32) -> Vec<u8> {
    let n = u32::try_from(pcm.len()).unwrap_or(u32::MAX);
    let mut out = dv_speak::wav_header(rate, Some(n)).to_vec();
    out.extend_from_slice(&pcm_bytes(pcm));
    out
}

/// A whole 16-bit mono FLAC stream (flacenc's default settings, block size
/// 4096).
pub(crate) fn flac(pcm: &[i16], rate: u32) -> Result<Vec<u8>, ApiError> {
    let config = flacenc::config::Encoder::default()
        .into_verified()
        .map_err(|(_, e)| ApiError::internal(format!("FLAC encoder settings: {e:?}")))?;
    let samples: Vec<i32> = pcm.iter().map(|&v| v as i32).collect();
    let source = flacenc::source::MemSource::from_samples(&samples, 1, 16, rate as usize);
    let stream = flacenc::encode_with_fixed_block_size(&config, source, config.block_size)
        .map_err(|e| ApiError::internal(format!("FLAC encoding failed: {e:?}")))?;
    let mut sink = flacenc::bitsink::ByteSink::new();
    stream.write(&mut sink).map_err(|e| ApiError::internal(format!("FLAC writing failed: {e:?}")))?;
    Ok(sink.as_slice().to_vec())
}

pub(crate) fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// One server-sent event: `data: <json>` and a blank line.
pub(crate) fn sse(event: &serde_json::Value) -> Bytes {
    Bytes::from(format!("data: {event}\n\n"))
}
