//! 16-bit mono PCM WAV: the 44-byte canonical header, and a file written as
//! samples arrive with its sizes patched at the end.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::SpeakError;

/// The size field of a stream of unknown length (RIFF and data sizes both).
pub const STREAMING_SIZE: u32 = u32::MAX;

/// The 44-byte header of a 16-bit mono PCM WAV at `rate` Hz holding
/// `samples` samples; `None` writes 0xFFFFFFFF into both size fields, as
/// streamed WAV does when the length is not known in advance.
pub fn wav_header(rate: u32, samples: Option<u32>) -> [u8; 44] {
    let (riff, data) = match samples {
        Some(n) => {
            let data = n.saturating_mul(2);
            (data.saturating_add(36), data)
        }
        None => (STREAMING_SIZE, STREAMING_SIZE),
    };
    let mut h = [0u8; 44];
    h[0..4].copy_from_slice(b"RIFF");
    h[4..8].copy_from_slice(&riff.to_le_bytes());
    h[8..16].copy_from_slice(b"WAVEfmt ");
    h[16..20].copy_from_slice(&16u32.to_le_bytes());
    h[20..22].copy_from_slice(&1u16.to_le_bytes()); // PCM
    h[22..24].copy_from_slice(&1u16.to_le_bytes()); // mono
    h[24..28].copy_from_slice(&rate.to_le_bytes());
    h[28..32].copy_from_slice(&rate.saturating_mul(2).to_le_bytes()); // bytes per second
    h[32..34].copy_from_slice(&2u16.to_le_bytes()); // block align
    h[34..36].copy_from_slice(&16u16.to_le_bytes()); // bits per sample
    h[36..40].copy_from_slice(b"data");
    h[40..44].copy_from_slice(&data.to_le_bytes());
    h
}

/// A 16-bit mono WAV file written as samples arrive (each
/// [`WavWriter::push`] reaches the file), sizes patched by
/// [`WavWriter::finish`]. Until then the header says 0 samples.
pub struct WavWriter {
    path: PathBuf,
    file: BufWriter<File>,
    samples: u32,
}

impl WavWriter {
    /// Creates (or truncates) `path` and writes the header.
    pub fn create(path: &Path, rate: u32) -> Result<WavWriter, SpeakError> {
        let io = |source| SpeakError::Io { path: path.to_path_buf(), source };
        let mut file = BufWriter::new(File::create(path).map_err(io)?);
        file.write_all(&wav_header(rate, Some(0))).map_err(io)?;
        Ok(WavWriter { path: path.to_path_buf(), file, samples: 0 })
    }

    /// Appends `pcm` and flushes it to the file. A file past 2³¹ samples
    /// (36 hours at 16384 Hz) is refused: WAV sizes are 32-bit.
    pub fn push(&mut self, pcm: &[i16]) -> Result<(), SpeakError> {
        let n = u32::try_from(pcm.len()).ok().and_then(|n| self.samples.checked_add(n)).filter(|&n| n < 1 << 31);
        let Some(total) = n else {
            return Err(SpeakError::BadOption {
                what: "WAV length",
                reason: format!("{}: more than 2^31 samples do not fit a WAV file", self.path.display()),
            });
        };
        let bytes: Vec<u8> = pcm.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.write(|f| {
            f.write_all(&bytes)?;
            f.flush()
        })?;
        self.samples = total;
        Ok(())
    }

    /// Samples written so far.
    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// Patches the RIFF and data sizes and flushes.
    pub fn finish(mut self) -> Result<(), SpeakError> {
        let data = self.samples * 2;
        self.write(|f| {
            f.seek(SeekFrom::Start(4))?;
            f.write_all(&(36 + data).to_le_bytes())?;
            f.seek(SeekFrom::Start(40))?;
            f.write_all(&data.to_le_bytes())?;
            f.flush()
        })
    }

    fn write(&mut self, op: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>) -> Result<(), SpeakError> {
        op(&mut self.file).map_err(|source| SpeakError::Io { path: self.path.clone(), source })
    }
}
