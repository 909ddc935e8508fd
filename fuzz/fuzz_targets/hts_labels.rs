//! HTS full-context labels with times (`hts_engine -od`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = dv_corpus::embedded::parse_hts_durations(std::path::Path::new("fuzz.lab"), text);
});
