//! Audio file facts without decoding.

use std::fs::File;
use std::path::Path;
use std::sync::OnceLock;

use symphonia::core::formats::FormatOptions;
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use symphonia::core::probe::{Hint, Probe};
use symphonia::default::formats::{FlacReader, MpaReader};

use crate::{wav, AudioError};

/// The container a file was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    Wav,
    Flac,
    Mp3,
}

/// How samples are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleFormat {
    /// Integer PCM of this many bits.
    Pcm(u16),
    /// IEEE float of this many bits.
    Float(u16),
    /// Compressed (FLAC, MP3): decoded to this many bits, when known.
    Coded(Option<u32>),
}

/// What a corpus reader needs to know about an audio file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AudioInfo {
    pub container: Container,
    pub format: SampleFormat,
    /// Samples per second per channel, in Hz.
    pub sample_rate: u32,
    pub channels: u16,
    /// Samples per channel.
    pub frames: u64,
}

impl AudioInfo {
    /// Length in seconds.
    pub fn duration(&self) -> f64 {
        self.frames as f64 / self.sample_rate as f64
    }
}

/// Reads the header of a WAV, FLAC or MP3 file (chosen by content for WAV,
/// by extension or content for the others).
pub fn probe(path: &Path) -> Result<AudioInfo, AudioError> {
    let io = |source| AudioError::Io { path: path.to_path_buf(), source };
    let mut file = File::open(path).map_err(io)?;
    let mut magic = [0u8; 4];
    let n = std::io::Read::read(&mut file, &mut magic).map_err(io)?;
    if n == 4 && &magic == b"RIFF" {
        return wav::probe(path);
    }
    if n == 0 {
        return Err(AudioError::Empty { path: path.to_path_buf() });
    }
    probe_coded(path)
}

/// The container readers asked of Symphonia: FLAC and MP3, the formats
/// decoded through it (WAV is read natively, from its `RIFF` magic). Not its
/// ID3v2 reader either, which panicked on a fuzzed tag: the probe scans past
/// a tag to the first MPEG frame instead.
/// Symphonia's probe scans past leading bytes for any marker it knows, so
/// with its WAV reader registered a file of other bytes followed by `RIFF…`
/// reached that reader, whose sample rate of 0 panicked in
/// `TimeBase::new` (found by fuzzing: `fuzz/regressions/audio_decode/`).
pub(crate) fn coded_probe() -> &'static Probe {
    static PROBE: OnceLock<Probe> = OnceLock::new();
    PROBE.get_or_init(|| {
        let mut probe = Probe::default();
        probe.register_all::<FlacReader>();
        probe.register_all::<MpaReader>();
        probe
    })
}

fn probe_coded(path: &Path) -> Result<AudioInfo, AudioError> {
    let file = File::open(path).map_err(|source| AudioError::Io { path: path.to_path_buf(), source })?;
    let mut hint = Hint::new();
    if let Some(ext) = path.extension().and_then(|e| e.to_str()) {
        hint.with_extension(ext);
    }
    let mss = MediaSourceStream::new(Box::new(file), Default::default());
    let probed = coded_probe()
        .format(&hint, mss, &FormatOptions::default(), &MetadataOptions::default())
        .map_err(|e| AudioError::Malformed { path: path.to_path_buf(), reason: e.to_string() })?;
    let track = probed
        .format
        .default_track()
        .ok_or_else(|| AudioError::Malformed { path: path.to_path_buf(), reason: "no audio track".into() })?;
    let p = &track.codec_params;
    let container = match p.codec {
        symphonia::core::codecs::CODEC_TYPE_FLAC => Container::Flac,
        symphonia::core::codecs::CODEC_TYPE_MP3 => Container::Mp3,
        other => {
            return Err(AudioError::Unsupported { path: path.to_path_buf(), what: format!("codec {other:?}") });
        }
    };
    let missing =
        |what: &str| AudioError::Malformed { path: path.to_path_buf(), reason: format!("header lacks {what}") };
    let sample_rate = p.sample_rate.ok_or_else(|| missing("the sample rate"))?;
    let channels = p.channels.map(|c| c.count() as u16).ok_or_else(|| missing("the channel layout"))?;
    let frames = p.n_frames.ok_or_else(|| missing("the number of frames"))?;
    if frames == 0 {
        return Err(AudioError::Empty { path: path.to_path_buf() });
    }
    Ok(AudioInfo { container, format: SampleFormat::Coded(p.bits_per_sample), sample_rate, channels, frames })
}
