//! Small corpus fixtures written into temporary directories.

use std::path::{Path, PathBuf};

/// A 16-bit mono PCM WAV of `frames` samples of a quiet ramp.
pub fn wav(path: &Path, rate: u32, frames: usize) {
    write_wav(path, 1, rate, 16, frames, frames * 2);
}

/// A WAV with any format tag, and `declared` data bytes in its header.
pub fn write_wav(path: &Path, tag: u16, rate: u32, bits: u16, frames: usize, declared: usize) {
    let align = bits / 8;
    let data: Vec<u8> = (0..frames * align as usize).map(|i| (i % 7) as u8).collect();
    let mut b = Vec::new();
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&tag.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&rate.to_le_bytes());
    b.extend_from_slice(&(rate * align as u32).to_le_bytes());
    b.extend_from_slice(&align.to_le_bytes());
    b.extend_from_slice(&bits.to_le_bytes());
    b.extend_from_slice(b"data");
    b.extend_from_slice(&(declared as u32).to_le_bytes());
    b.extend_from_slice(&data);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, b).unwrap();
}

/// A truncated WAV: the header declares 10x the data present.
pub fn truncated_wav(path: &Path) {
    write_wav(path, 1, 16_000, 16, 100, 2000);
}

/// A WAV with a header and no samples.
pub fn empty_wav(path: &Path) {
    write_wav(path, 1, 16_000, 16, 0, 0);
}

/// A mu-law WAV (format tag 7), which the pipeline does not decode.
pub fn mulaw_wav(path: &Path) {
    write_wav(path, 7, 8_000, 8, 800, 800);
}

/// The 0.25 s, 16 kHz FLAC fixture of dv-audio.
pub fn flac(path: &Path) {
    let src = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run under cargo test"))
        .join("../../pipeline/audio/tests/fixtures/tone.flac");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::copy(src, path).unwrap();
}

pub fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}
