//! End-to-end tests of the `dv` binary.

mod align;
mod cluster;
mod fault;
mod lexicon;
mod listen;
mod procs;
mod recipe;
mod s3;
mod serve;
mod synth;
mod train;

use std::path::Path;
use std::process::{Command, Output};

fn dv(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dv")).args(args).output().expect("run dv")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// One second of 16-bit mono silence at 22,050 Hz.
fn silence_wav(path: &Path) {
    let rate: u32 = 22_050;
    let data = vec![0u8; rate as usize * 2];
    let mut b = b"RIFF".to_vec();
    b.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    for v in [16u32.to_le_bytes(), [1, 0, 1, 0], rate.to_le_bytes(), (rate * 2).to_le_bytes(), [2, 0, 16, 0]] {
        b.extend_from_slice(&v);
    }
    b.extend_from_slice(b"data");
    b.extend_from_slice(&(data.len() as u32).to_le_bytes());
    b.extend_from_slice(&data);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, b).unwrap();
}

#[test]
fn inspect_writes_manifest_and_reports_bad_items() {
    let d = tempfile::tempdir().unwrap();
    let corpus = d.path().join("LJSpeech-1.1");
    std::fs::create_dir_all(&corpus).unwrap();
    std::fs::write(
        corpus.join("metadata.csv"),
        "LJ1|Dr. Smith paid $3.|Doctor Smith paid three dollars.\nLJ2|Gone.|Gone.\n",
    )
    .unwrap();
    silence_wav(&corpus.join("wavs/LJ1.wav"));
    let manifest = d.path().join("out/m.parquet");
    let o = dv(&["corpus", "inspect", corpus.to_str().unwrap(), "--manifest", manifest.to_str().unwrap()]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("(ljspeech)") && out.contains("utterances     1") && out.contains("speakers       1: LJ (1)"),
        "{out}"
    );
    assert!(out.contains("missing_audio") && out.contains("LJ2.wav"), "the bad item and its file are shown: {out}");
    let rows = dv_manifest::utterances_from_frame(&dv_manifest::read_parquet(&manifest).unwrap()).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].normalized, "doctor smith paid three dollars.");
    let bad = dv_manifest::read_parquet(&d.path().join("out/m.bad.parquet")).unwrap();
    assert_eq!(bad.height(), 1);
}

#[test]
fn inspect_of_a_missing_corpus_fails_naming_it() {
    let o = dv(&["corpus", "inspect", "/nonexistent/corpus", "--manifest", "/tmp/never.parquet"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/corpus"));
}

#[test]
fn text_commands() {
    let o = dv(&["text", "normalize", "In 1999, Dr. Who paid $3.50!"]);
    assert_eq!(stdout(&o).trim(), "in nineteen ninety nine, doctor who paid three dollars fifty cents.");
    let o = dv(&["text", "phonemes", "hello zyzzyx"]);
    assert_eq!(stdout(&o), "hello\tHH AH0 L OW1\nzyzzyx\t<OOV>\n");
    assert!(String::from_utf8_lossy(&o.stderr).contains("1 OOV word(s): zyzzyx"));
    let o = dv(&["text", "lexicon-stats"]);
    assert!(stdout(&o).contains("G2P filter (§4.2) keeps  117590 words"), "{}", stdout(&o));
}

#[test]
fn doctor_reports_the_linked_libtorch() {
    let o = dv(&["doctor"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    let field = |name: &str| {
        out.lines().find(|l| l.trim_start().starts_with(name)).map(|l| l.trim_start()[name.len()..].trim().to_string())
    };
    assert!(field("libtorch ").is_some_and(|v| v.starts_with("2.11.0")), "{out}");
    assert_eq!(field("libtorch_cuda linked").as_deref(), Some("true"), "the CUDA wheel is force-linked: {out}");
    assert!(out.contains("CPU SIMD"), "{out}");
}

/// `dv … | head`: a reader that closes the pipe early ends dv with the
/// SIGPIPE status (141), not a panic and its backtrace.
#[test]
fn a_closed_stdout_pipe_ends_quietly() {
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(2500); // output beyond a pipe's 64 KiB
    let mut child = Command::new(env!("CARGO_BIN_EXE_dv"))
        .args(["text", "normalize", &text])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run dv");
    drop(child.stdout.take()); // the reader goes away before dv prints
    let o = child.wait_with_output().expect("wait for dv");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(141), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
