//! RIFF/WAVE headers, parsed exactly.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::{AudioError, AudioInfo, Container, SampleFormat};

const FORMAT_PCM: u16 = 1;
const FORMAT_FLOAT: u16 = 3;
const FORMAT_EXTENSIBLE: u16 = 0xfffe;

struct Fmt {
    tag: u16,
    channels: u16,
    sample_rate: u32,
    block_align: u16,
    bits: u16,
}

fn tag_name(tag: u16) -> String {
    match tag {
        2 => "Microsoft ADPCM".into(),
        6 => "A-law".into(),
        7 => "mu-law".into(),
        0x11 => "IMA ADPCM".into(),
        0x55 => "MPEG layer 3 in WAV".into(),
        t => format!("WAV format tag {t:#06x}"),
    }
}

/// Reads a WAV header and checks the data chunk against the file's length.
pub(crate) fn probe(path: &Path) -> Result<AudioInfo, AudioError> {
    probe_at(path).map(|(info, _)| info)
}

/// [`probe`], and the byte offset of the first sample.
fn probe_at(path: &Path) -> Result<(AudioInfo, u64), AudioError> {
    let io = |source| AudioError::Io { path: path.to_path_buf(), source };
    let malformed = |reason: &str| AudioError::Malformed { path: path.to_path_buf(), reason: reason.to_string() };
    let mut f = File::open(path).map_err(io)?;
    let file_len = f.metadata().map_err(io)?.len();
    let mut riff = [0u8; 12];
    f.read_exact(&mut riff).map_err(|_| malformed("shorter than a RIFF header"))?;
    if &riff[0..4] != b"RIFF" || &riff[8..12] != b"WAVE" {
        return Err(malformed("not a RIFF/WAVE file"));
    }
    let mut fmt: Option<Fmt> = None;
    let mut pos = 12u64;
    loop {
        let mut head = [0u8; 8];
        if f.read_exact(&mut head).is_err() {
            return Err(if fmt.is_none() { malformed("no fmt chunk") } else { malformed("no data chunk") });
        }
        pos += 8;
        let id = [head[0], head[1], head[2], head[3]];
        let size = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as u64;
        match &id {
            b"fmt " => {
                if size < 16 {
                    return Err(malformed("fmt chunk shorter than 16 bytes"));
                }
                let mut b = vec![0u8; size as usize];
                f.read_exact(&mut b).map_err(|_| malformed("fmt chunk cut short"))?;
                let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
                let mut tag = u16_at(0);
                if tag == FORMAT_EXTENSIBLE {
                    if size < 26 {
                        return Err(malformed("extensible fmt chunk shorter than 26 bytes"));
                    }
                    tag = u16_at(24); // first two bytes of the sub-format GUID
                }
                fmt = Some(Fmt {
                    tag,
                    channels: u16_at(2),
                    sample_rate: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
                    block_align: u16_at(12),
                    bits: u16_at(14),
                });
                pos += size;
            }
            b"data" => {
                let fmt = fmt.ok_or_else(|| malformed("data chunk before fmt chunk"))?;
                return finish(path, fmt, size, file_len.saturating_sub(pos)).map(|info| (info, pos));
            }
            _ => {
                pos += size + (size & 1);
                f.seek(SeekFrom::Start(pos)).map_err(io)?;
            }
        }
        if size & 1 == 1 && &id == b"fmt " {
            pos += 1;
            f.seek(SeekFrom::Start(pos)).map_err(io)?;
        }
    }
}

fn finish(path: &Path, fmt: Fmt, declared: u64, available: u64) -> Result<AudioInfo, AudioError> {
    let unsupported = |what: String| AudioError::Unsupported { path: path.to_path_buf(), what };
    let format = match (fmt.tag, fmt.bits) {
        (FORMAT_PCM, b @ (8 | 16 | 24 | 32)) => SampleFormat::Pcm(b),
        (FORMAT_FLOAT, b @ (32 | 64)) => SampleFormat::Float(b),
        (FORMAT_PCM, b) => return Err(unsupported(format!("{b}-bit PCM"))),
        (FORMAT_FLOAT, b) => return Err(unsupported(format!("{b}-bit float"))),
        (tag, _) => return Err(unsupported(tag_name(tag))),
    };
    let malformed = |reason: String| AudioError::Malformed { path: path.to_path_buf(), reason };
    if fmt.channels == 0 || fmt.sample_rate == 0 {
        return Err(malformed(format!("{} channels at {} Hz", fmt.channels, fmt.sample_rate)));
    }
    let expected_align = fmt.channels as u32 * (fmt.bits as u32 / 8);
    if fmt.block_align as u32 != expected_align {
        return Err(malformed(format!(
            "block align {} for {} channels of {} bits",
            fmt.block_align, fmt.channels, fmt.bits
        )));
    }
    // 0xFFFFFFFF is written by streaming encoders that never patched the size.
    let bytes = if declared == u32::MAX as u64 { available } else { declared };
    if bytes > available {
        return Err(AudioError::Truncated { path: path.to_path_buf(), declared: bytes, available });
    }
    let frames = bytes / fmt.block_align as u64;
    if frames == 0 {
        return Err(AudioError::Empty { path: path.to_path_buf() });
    }
    Ok(AudioInfo { container: Container::Wav, format, sample_rate: fmt.sample_rate, channels: fmt.channels, frames })
}

/// Decodes a WAV file to mono f32 in `[-1, 1]`, averaging the channels.
/// Integer PCM is scaled by `2^(bits-1)` (8-bit PCM is unsigned, offset 128).
pub(crate) fn decode(path: &Path) -> Result<(AudioInfo, Vec<f32>), AudioError> {
    let io = |source| AudioError::Io { path: path.to_path_buf(), source };
    let (info, offset) = probe_at(path)?;
    let mut f = File::open(path).map_err(io)?;
    f.seek(SeekFrom::Start(offset)).map_err(io)?;
    let (SampleFormat::Pcm(bits) | SampleFormat::Float(bits)) = info.format else {
        return Err(AudioError::Unsupported { path: path.to_path_buf(), what: "coded audio in WAV".into() });
    };
    let width = bits as usize / 8;
    let channels = info.channels as usize;
    let mut bytes = vec![0u8; info.frames as usize * channels * width];
    f.read_exact(&mut bytes).map_err(io)?;
    let sample = |b: &[u8]| -> f32 {
        match (info.format, width) {
            (SampleFormat::Pcm(_), 1) => (b[0] as f32 - 128.0) / 128.0,
            (SampleFormat::Pcm(_), 2) => i16::from_le_bytes([b[0], b[1]]) as f32 / 32_768.0,
            (SampleFormat::Pcm(_), 3) => (i32::from_le_bytes([0, b[0], b[1], b[2]]) >> 8) as f32 / 8_388_608.0,
            (SampleFormat::Pcm(_), _) => (i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64 / 2_147_483_648.0) as f32,
            (_, 4) => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            _ => f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32,
        }
    };
    let scale = 1.0 / channels as f32;
    let mono = bytes
        .chunks_exact(width * channels)
        .map(|frame| frame.chunks_exact(width).map(sample).sum::<f32>() * scale)
        .collect();
    Ok((info, mono))
}
