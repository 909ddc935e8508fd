//! xwaves phone labels (CMU ARCTIC `lab/*.lab`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = dv_corpus::parse_xwaves_lab(text);
});
