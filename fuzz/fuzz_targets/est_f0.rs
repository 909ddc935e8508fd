//! EST ascii F0 tracks (CMU ARCTIC `f0/*.f0`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = dv_corpus::parse_est_f0(text);
});
