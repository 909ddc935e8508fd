//! Bytes on the wire: PCM, WAV (streamed or sized), FLAC (`flacenc`, pure
//! Rust), MP3 (LAME, `mp3.rs`), Ogg Opus (libopus, `ogg_opus.rs`) and
//! server-sent events.

use base64::Engine;
use bytes::Bytes;
use flacenc::component::BitRepr;
use flacenc::error::Verify;

use crate::error::ApiError;
use crate::mp3::Mp3;
use crate::ogg_opus::OggOpus;
use crate::request::ResponseFormat;

/// A compressed format's encoder, fed blocks of samples as they are
/// rendered and giving bytes as they are ready: MP3 frames, Ogg pages.
pub(crate) enum Encoder {
    Mp3(Mp3),
    OggOpus(OggOpus),
}

impl Encoder {
    /// The encoder of `format` at `rate` Hz (already one the format
    /// carries: [`crate::request::SpeechRequest::output_rate`]); `None` for
    /// the formats sent as samples (pcm, wav) or encoded whole (flac).
    /// `serial` names an Ogg stream.
    pub(crate) fn new(format: ResponseFormat, rate: u32, serial: u32) -> Result<Option<Encoder>, ApiError> {
        Ok(match format {
            ResponseFormat::Mp3 => Some(Encoder::Mp3(Mp3::new(rate)?)),
            ResponseFormat::Opus if rate == crate::ogg_opus::RATE => Some(Encoder::OggOpus(OggOpus::new(serial)?)),
            ResponseFormat::Opus => return Err(ApiError::internal(format!("Opus is coded at 48000 Hz, not {rate}"))),
            ResponseFormat::Wav | ResponseFormat::Pcm | ResponseFormat::Flac => None,
        })
    }

    /// Appends to `out` the bytes ready after `pcm`.
    pub(crate) fn push(&mut self, pcm: &[i16], out: &mut Vec<u8>) -> Result<(), ApiError> {
        match self {
            Encoder::Mp3(e) => e.push(pcm, out),
            Encoder::OggOpus(e) => e.push(pcm, out),
        }
    }

    /// Appends to `out` the rest: what the encoder held back, and the end.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), ApiError> {
        match self {
            Encoder::Mp3(e) => e.finish(out),
            Encoder::OggOpus(e) => e.finish(out),
        }
    }
}

/// A whole answer in `format`: the bytes a `stream: false` request gets
/// for `pcm` at `rate` Hz (a sized WAV; `serial` names an Ogg stream).
/// Blocking: FLAC, MP3 and Opus take milliseconds per second of audio
/// (`benchmarks/serve.md`). Opus needs `rate` 48000, MP3 one of the
/// rates an MP3 frame can name.
pub fn encode(format: ResponseFormat, pcm: &[i16], rate: u32, serial: u32) -> Result<Vec<u8>, ApiError> {
    match format {
        ResponseFormat::Wav => Ok(wav(pcm, rate)),
        ResponseFormat::Pcm => Ok(pcm_bytes(pcm)),
        ResponseFormat::Flac => flac(pcm, rate),
        ResponseFormat::Mp3 | ResponseFormat::Opus => {
            let mut out = Vec::new();
            if let Some(mut e) = Encoder::new(format, rate, serial)? {
                e.push(pcm, &mut out)?;
                e.finish(&mut out)?;
            }
            Ok(out)
        }
    }
}

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

#[cfg(test)]
pub(crate) mod tests {
    /// `n` samples of a sine at `hz`, amplitude `level` of full scale.
    pub(crate) fn tone(hz: f64, rate: u32, n: usize, level: f64) -> Vec<i16> {
        (0..n)
            .map(|i| (level * 32767.0 * (std::f64::consts::TAU * hz * i as f64 / rate as f64).sin()).round() as i16)
            .collect()
    }

    pub(crate) fn rms(x: &[i16]) -> f64 {
        (x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / x.len() as f64).sqrt()
    }

    /// Sign changes, a pitch measure that ignores level and delay.
    pub(crate) fn zero_crossings(x: &[i16]) -> usize {
        x.windows(2).filter(|w| (w[0] < 0) != (w[1] < 0)).count()
    }
}
