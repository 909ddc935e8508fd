//! A voice package's `config.json`, read and validated.
#![no_main]
use libfuzzer_sys::fuzz_target;
mod scratch;

fuzz_target!(|data: &[u8]| {
    let path = scratch::dir().join("config.json");
    std::fs::write(&path, data).unwrap();
    if let Ok(config) = dv_voice::read_config(&path) {
        let _ = dv_voice::expected_tensors(&config);
    }
});
