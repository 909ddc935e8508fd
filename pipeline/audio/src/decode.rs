//! Decoding to mono f32: WAV natively, FLAC and MP3 through Symphonia.

use std::fs::File;
use std::path::Path;

use symphonia::core::audio::SampleBuffer;
use symphonia::core::codecs::DecoderOptions;
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::FormatOptions;
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use symphonia::core::probe::Hint;

use crate::{probe, wav, AudioError, AudioInfo, Container};

/// A decoded file: its header facts and the mono samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub info: AudioInfo,
    /// The channels averaged, in `[-1, 1]`, at `info.sample_rate`.
    pub samples: Vec<f32>,
}

/// Decodes a WAV, FLAC or MP3 file to mono f32, averaging channels. A file
/// whose decoded length differs from its header (a truncated FLAC, say) is
/// [`AudioError::Truncated`].
pub fn decode(path: &Path) -> Result<Decoded, AudioError> {
    let info = probe(path)?;
    if info.container == Container::Wav {
        let (info, samples) = wav::decode(path)?;
        return Ok(Decoded { info, samples });
    }
    let malformed = |reason: String| AudioError::Malformed { path: path.to_path_buf(), reason };
    let file = File::open(path).map_err(|source| AudioError::Io { path: path.to_path_buf(), source })?;
    let mut hint = Hint::new();
    if let Some(ext) = path.extension().and_then(|e| e.to_str()) {
        hint.with_extension(ext);
    }
    let file_len = file.metadata().map_or(0, |m| m.len());
    let mss = MediaSourceStream::new(Box::new(file), Default::default());
    let mut format = crate::probe::coded_probe()
        .format(&hint, mss, &FormatOptions::default(), &MetadataOptions::default())
        .map_err(|e| malformed(e.to_string()))?
        .format;
    let track = format.default_track().ok_or_else(|| malformed("no audio track".into()))?;
    let track_id = track.id;
    let mut decoder = symphonia::default::get_codecs()
        .make(&track.codec_params, &DecoderOptions::default())
        .map_err(|e| AudioError::Unsupported { path: path.to_path_buf(), what: e.to_string() })?;
    let channels = info.channels as usize;
    // The header's frame count is a claim, not a size: reserve no more than
    // the file's length (it grows past that only as samples really decode).
    let mut samples = Vec::with_capacity(info.frames.min(file_len) as usize);
    let mut buf: Option<SampleBuffer<f32>> = None;
    loop {
        let packet = match format.next_packet() {
            Ok(p) => p,
            Err(SymphoniaError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(malformed(e.to_string())),
        };
        if packet.track_id() != track_id {
            continue;
        }
        let decoded = match decoder.decode(&packet) {
            Ok(d) => d,
            Err(SymphoniaError::DecodeError(e)) => return Err(malformed(format!("corrupt packet: {e}"))),
            Err(e) => return Err(malformed(e.to_string())),
        };
        let b = buf.get_or_insert_with(|| SampleBuffer::new(decoded.capacity() as u64, *decoded.spec()));
        if (b.capacity() as u64) < decoded.capacity() as u64 * channels as u64 {
            *b = SampleBuffer::new(decoded.capacity() as u64, *decoded.spec());
        }
        b.copy_interleaved_ref(decoded);
        let scale = 1.0 / channels as f32;
        samples.extend(b.samples().chunks_exact(channels).map(|f| f.iter().sum::<f32>() * scale));
    }
    if info.container == Container::Flac && samples.len() as u64 != info.frames {
        return Err(AudioError::Truncated {
            path: path.to_path_buf(),
            declared: info.frames * 2 * channels as u64,
            available: samples.len() as u64 * 2 * channels as u64,
        });
    }
    if samples.is_empty() {
        return Err(AudioError::Empty { path: path.to_path_buf() });
    }
    let info = AudioInfo { frames: samples.len() as u64, ..info };
    Ok(Decoded { info, samples })
}
