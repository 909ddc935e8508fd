//! WAV, FLAC and MP3: probe the header, then decode. The first byte picks the
//! extension (the decoders go by it); the rest is the file.
#![no_main]
use libfuzzer_sys::fuzz_target;
mod scratch;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else { return };
    let ext = ["wav", "flac", "mp3"][pick as usize % 3];
    let path = scratch::dir().join(format!("input.{ext}"));
    std::fs::write(&path, bytes).unwrap();
    let _ = dv_audio::probe(&path);
    let _ = dv_audio::decode(&path);
});
