//! The speech server's request bodies (`POST /v1/audio/speech`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let _ = dv_serve::SpeechRequest::parse(body);
});
