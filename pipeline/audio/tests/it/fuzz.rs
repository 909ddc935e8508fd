//! The inputs the `audio_decode` fuzz target found crashing (`fuzz/regressions/
//! audio_decode/`), replayed through the same calls: the first byte picks the
//! extension, the rest is the file. Each is malformed and must be an error
//! value, never a panic or an abort.

use std::path::PathBuf;

#[test]
fn fuzz_regressions_are_errors() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions/audio_decode");
    let tmp = tempfile::tempdir().unwrap();
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let input = std::fs::read(entry.unwrap().path()).unwrap();
        let Some((&pick, bytes)) = input.split_first() else { continue };
        let path = tmp.path().join(format!("input.{}", ["wav", "flac", "mp3"][pick as usize % 3]));
        std::fs::write(&path, bytes).unwrap();
        let _ = dv_audio::probe(&path);
        assert!(dv_audio::decode(&path).is_err(), "input {n} decoded");
        n += 1;
    }
    assert!(n > 0, "no inputs in {}", dir.display());
}
