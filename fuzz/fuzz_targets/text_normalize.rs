//! The text front end: normalization into sentences of words, and the
//! CMUDict-format lexicon parser (a voice's `lexicon.dict`).
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|text: &str| {
    let n = dv_text::normalize(text);
    let _ = n.sentences(dv_text::MAX_SENTENCE_WORDS);
    if let Ok(lexicon) = dv_text::Lexicon::parse(text, Path::new("fuzz.dict")) {
        let _ = lexicon.lookup(&n);
    }
});
