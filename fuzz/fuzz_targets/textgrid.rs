//! Praat TextGrids (long text format); what parses must write back.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(grid) = dv_align::TextGrid::parse(text) {
        let _ = grid.to_long_text();
    }
});
