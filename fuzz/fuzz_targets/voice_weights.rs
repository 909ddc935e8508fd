//! A voice package's `model.safetensors` beside a valid `config.json` (a
//! (2, 8, 8) WaveNet, so that small inputs can satisfy it), then the whole
//! package read.
#![no_main]
use libfuzzer_sys::fuzz_target;
mod scratch;

const CONFIG: &str = include_str!("voice_weights.config.json");

fuzz_target!(|data: &[u8]| {
    let dir = scratch::dir().join("voice");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), CONFIG).unwrap();
    std::fs::write(dir.join("model.safetensors"), data).unwrap();
    let _ = dv_voice::Voice::read(&dir);
});
