//! The pronunciation lexicon needs nothing but the binary: `dv g2p`,
//! `dv text phonemes` and `dv synth` with the shipped voice run with a
//! `PATH` that holds no program at all (so no `python3`), and `DV_CMUDICT`
//! still overrides the built-in CMUDict.

use std::path::Path;
use std::process::{Command, Output};

/// `dv args` with an empty folder as `PATH`, its own `DV_HOME`, and no
/// variable that would pick a lexicon or voice.
fn dv_alone(home: &Path, args: &[&str]) -> Output {
    let empty = home.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    Command::new(env!("CARGO_BIN_EXE_dv"))
        .args(args)
        .env("PATH", &empty)
        .env("DV_HOME", home)
        .env_remove("DV_CMUDICT")
        .env_remove("DV_VOICE")
        .env_remove("DV_VOICES")
        .output()
        .expect("run dv")
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn g2p_and_phonemes_use_the_built_in_cmudict_without_python() {
    let d = tempfile::tempdir().unwrap();
    let printed = ok(&dv_alone(d.path(), &["g2p", "hello", "read"]));
    assert!(printed.contains("hello\tlexicon\tHH AH0 L OW1"), "{printed}");
    assert!(printed.contains("read\tlexicon\tR EH1 D"), "CMUDict's first pronunciation: {printed}");
    // What the model cannot read as typed is read as the text front end reads it.
    let printed = ok(&dv_alone(d.path(), &["g2p", "Café", "3rd"]));
    assert!(printed.contains("cafe\tlexicon\tK AH0 F EY1") && printed.contains("third\tlexicon\tTH ER1 D"), "{printed}");
    let printed = ok(&dv_alone(d.path(), &["text", "phonemes", "hello there"]));
    assert_eq!(printed, "hello\tHH AH0 L OW1\nthere\tDH EH1 R\n");
    let printed = ok(&dv_alone(d.path(), &["text", "lexicon-stats"]));
    assert!(printed.contains("built-in CMUDict 1.1.3") && printed.contains("keeps  117590 words"), "{printed}");
}

#[test]
fn dv_cmudict_overrides_the_built_in_lexicon() {
    let d = tempfile::tempdir().unwrap();
    let own = d.path().join("own.dict");
    std::fs::write(&own, "hello HH EH1 L OW0\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_dv"))
        .args(["text", "phonemes", "hello there"])
        .env("DV_CMUDICT", &own)
        .output()
        .unwrap();
    assert_eq!(ok(&o), "hello\tHH EH1 L OW0\nthere\t<OOV>\n");
    // A DV_CMUDICT that names no file is an error, not a silent fallback.
    let o = Command::new(env!("CARGO_BIN_EXE_dv"))
        .args(["text", "phonemes", "hello"])
        .env("DV_CMUDICT", d.path().join("absent.dict"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("DV_CMUDICT") && err.contains("absent.dict"), "{err}");
}

#[test]
fn synth_speaks_with_the_shipped_voice_without_python() {
    let d = tempfile::tempdir().unwrap();
    let wav = d.path().join("x.wav");
    // --f32 --threads 1: no calibration, the shortest run.
    let o = dv_alone(d.path(), &["synth", "--f32", "--threads", "1", "-o", wav.to_str().unwrap(), "Hello there."]);
    ok(&o);
    let bytes = std::fs::read(&wav).unwrap();
    let n = u32::from_le_bytes(bytes[40..44].try_into().unwrap()) as usize / 2;
    assert!(n > 8_000 && bytes.len() == 44 + 2 * n, "{} bytes for {n} samples", bytes.len());
}
