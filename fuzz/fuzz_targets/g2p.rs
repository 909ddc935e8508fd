//! G2P input: text pronounced with an empty lexicon, so every word goes
//! through the shipped voice's G2P model (`inference/voices/slt`).
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn model() -> &'static (dv_synth::G2p, dv_text::Lexicon) {
    static MODEL: OnceLock<(dv_synth::G2p, dv_text::Lexicon)> = OnceLock::new();
    MODEL.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../inference/voices/slt");
        let voice = dv_voice::Voice::read(std::path::Path::new(dir)).expect("the shipped voice");
        let lexicon = dv_text::Lexicon::parse("", std::path::Path::new("empty.dict")).unwrap();
        (dv_synth::G2p::new(&voice).expect("its G2P model"), lexicon)
    })
}

fuzz_target!(|text: &str| {
    if text.len() > 256 {
        return;
    }
    let (g2p, lexicon) = model();
    let _ = dv_speak::pronounce(text, lexicon, Some(g2p));
    let _ = g2p.greedy(text);
});
