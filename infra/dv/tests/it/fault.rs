//! Fault injection on the `dv` binary (issue 32; benchmarks/reliability.md):
//! `dv featurize` killed with SIGKILL, `dv featurize` and a checkpoint write
//! of `dv train` on a full disk, and a one-hour recording. After each fault
//! nothing half-written is visible, the error names the path, and the next
//! run completes with the output of a run that was never disturbed.
//!
//! The full disk is a small tmpfs mounted for the test, and so needs root
//! (CI runs as root); it is unmounted when the test ends, panics included.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use dv_process_group::ProcessGroup;

use crate::train::{losses, train_config};

/// A tmpfs of a given size mounted on a directory while this lives.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    fn mount(dir: &Path, bytes: u64) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs", dir.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "the disk-full tests mount a tmpfs, which needs root: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        Tmpfs { dir: dir.to_path_buf() }
    }

    /// Grows (or shrinks) the file system in place; its files stay.
    fn resize(&self, bytes: u64) {
        let o = Command::new("mount")
            .args(["-o", &format!("remount,size={bytes}"), self.dir.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

fn dv() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dv"))
}

fn text(o: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Every file under `dir`, by relative path, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.strip_prefix(dir).unwrap().to_str().unwrap().to_string(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Every file of `part` is a file of `whole`, byte for byte: nothing
/// half-written, no temporary file.
fn assert_whole_files(part: &BTreeMap<String, Vec<u8>>, whole: &BTreeMap<String, Vec<u8>>) {
    for (name, bytes) in part {
        let want = whole.get(name).unwrap_or_else(|| panic!("{name}: not a file of the undisturbed run"));
        assert!(bytes == want, "{name}: {} bytes, the undisturbed run wrote {}", bytes.len(), want.len());
    }
}

fn corpus(dir: &Path, n: usize) -> PathBuf {
    let out = dir.join("slt");
    let o = dv()
        .args(["corpus", "make-default", "--utterances", &n.to_string(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    out
}

const SHARDS: &str = "12";

fn featurize(corpus: &Path, out: &Path) -> Command {
    let mut c = dv();
    c.args(["featurize", "--corpus", corpus.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .args(["--shards", SHARDS, "--jobs", "1"]);
    c
}

#[test]
fn featurize_killed_with_sigkill_resumes_with_identical_output() {
    let d = tempfile::tempdir().unwrap();
    let corpus = corpus(d.path(), 12);
    let whole = d.path().join("whole");
    let o = featurize(&corpus, &whole).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let want = files(&whole);

    let out = d.path().join("killed");
    let mut job = ProcessGroup::spawn(featurize(&corpus, &out).stdout(Stdio::null()).stderr(Stdio::null())).unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let n = std::fs::read_dir(out.join("shards")).map(|r| r.count()).unwrap_or(0);
        if n >= 2 {
            job.kill().unwrap();
            break;
        }
        assert!(job.try_wait().unwrap().is_none(), "the job finished before it could be killed");
        assert!(Instant::now() < deadline, "no shard appeared");
        std::thread::sleep(Duration::from_millis(5));
    }
    let part = files(&out);
    let shards = part.keys().filter(|k| k.starts_with("shards/")).count();
    assert!(shards < 12 && !part.contains_key("manifest.json"), "killed mid-run: {:?}", part.keys());
    assert_whole_files(&part, &want);

    let o = featurize(&corpus, &out).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains(&format!("{shards} already complete and skipped")), "{}", text(&o));
    assert!(files(&out) == want, "the resumed output differs from the undisturbed run's");
}

#[test]
fn featurize_on_a_full_disk_names_the_path_and_completes_once_there_is_room() {
    let d = tempfile::tempdir().unwrap();
    let corpus = corpus(d.path(), 12);
    let whole = d.path().join("whole");
    let o = featurize(&corpus, &whole).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let want = files(&whole);
    let total: u64 = want.values().map(|b| b.len() as u64).sum();

    // Room for about a third of the output.
    let out = d.path().join("small");
    let disk = Tmpfs::mount(&out, (total / 3).max(4096));
    let o = featurize(&corpus, &out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    eprintln!("featurize on a full disk: {}", err.trim());
    assert!(!o.status.success(), "the job succeeded on a disk a third of its output's size");
    assert!(err.contains(out.to_str().unwrap()) && err.contains(".parquet"), "the error names the file: {err}");
    assert!(err.contains("No space left on device"), "{err}");
    let part = files(&out);
    assert!(!part.is_empty() && part.len() < want.len(), "{:?}", part.keys());
    assert_whole_files(&part, &want);

    disk.resize(total * 2 + 65536);
    let o = featurize(&corpus, &out).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(files(&out) == want, "the output after space was freed differs from the undisturbed run's");
}

/// The file is a whole safetensors file: its header parses and its last
/// tensor ends at the end of the file.
fn assert_whole_safetensors(name: &str, bytes: &[u8]) {
    assert!(bytes.len() >= 8, "{name}: {} bytes", bytes.len());
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let end = header.as_object().unwrap().values().filter_map(|t| t["data_offsets"][1].as_u64()).max().unwrap();
    assert_eq!(8 + n as u64 + end, bytes.len() as u64, "{name}: cut short");
}

#[test]
fn a_checkpoint_write_on_a_full_disk_names_the_path_and_resumes_once_there_is_room() {
    let steps = 30;
    let whole = tempfile::tempdir().unwrap();
    let o = dv()
        .args(["train", "--config", train_config(whole.path(), &whole.path().join("ck"), steps).to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let want = losses(&whole.path().join("metrics.jsonl"));
    let size = std::fs::metadata(whole.path().join("ck/step-0000000030.safetensors")).unwrap().len();

    // Room for one checkpoint and a half: the second write runs out.
    let d = tempfile::tempdir().unwrap();
    let ck = d.path().join("ck");
    let disk = Tmpfs::mount(&ck, size * 3 / 2);
    let config = train_config(d.path(), &ck, steps);
    let o = dv().args(["train", "--config", config.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    eprintln!("checkpoint on a full disk: {}", err.lines().find(|l| l.contains("No space")).unwrap_or(""));
    assert!(!o.status.success(), "training succeeded with room for one checkpoint: {err}");
    assert!(err.contains(ck.to_str().unwrap()) && err.contains("step-0000000010.safetensors"), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    let left = files(&ck);
    assert_eq!(left.keys().collect::<Vec<_>>(), ["step-0000000005.safetensors"], "only whole checkpoints");
    for (name, bytes) in &left {
        assert_whole_safetensors(name, bytes);
    }

    disk.resize(size * 4 + 65536);
    let o = dv().args(["train", "--config", config.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    assert!(err.contains("resumed from") && err.contains("step-0000000005.safetensors"), "{err}");
    assert_eq!(losses(&d.path().join("metrics.jsonl")), want, "losses after the full disk and the resume differ");
}

/// `count` seconds of a 16-bit mono sine at 16 kHz, written in 1 MB pieces.
fn sine_wav(path: &Path, seconds: u32) {
    use std::io::Write;
    let rate: u32 = 16_000;
    let bytes = seconds * rate * 2;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    f.write_all(b"RIFF").unwrap();
    f.write_all(&(36 + bytes).to_le_bytes()).unwrap();
    f.write_all(b"WAVEfmt ").unwrap();
    for v in [16u32.to_le_bytes(), [1, 0, 1, 0], rate.to_le_bytes(), (rate * 2).to_le_bytes(), [2, 0, 16, 0]] {
        f.write_all(&v).unwrap();
    }
    f.write_all(b"data").unwrap();
    f.write_all(&bytes.to_le_bytes()).unwrap();
    let second: Vec<u8> = (0..rate).flat_map(|i| (((i as f32 * 0.11).sin() * 8000.0) as i16).to_le_bytes()).collect();
    for _ in 0..seconds {
        f.write_all(&second).unwrap();
    }
}

/// Runs `cmd` under Python, returning its output and peak resident set in
/// KiB (`getrusage(RUSAGE_CHILDREN).ru_maxrss`).
fn peak_rss(cmd: &mut Command) -> (Output, u64) {
    let mut args = vec![cmd.get_program().to_str().unwrap().to_string()];
    args.extend(cmd.get_args().map(|a| a.to_str().unwrap().to_string()));
    let o = Command::new("python3")
        .args([
            "-c",
            "import resource, subprocess, sys\n\
             r = subprocess.run(sys.argv[1:])\n\
             print('peak_rss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n\
             sys.exit(r.returncode)",
        ])
        .args(&args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let kib = err.lines().find_map(|l| l.strip_prefix("peak_rss_kib ")).and_then(|v| v.parse().ok());
    (o, kib.unwrap_or_else(|| panic!("{err}")))
}

#[test]
fn a_one_hour_recording_is_refused_with_the_limit_named_in_bounded_memory() {
    let d = tempfile::tempdir().unwrap();
    sine_wav(&d.path().join("short.wav"), 3);
    sine_wav(&d.path().join("hour.wav"), 3600);
    let table = |name: &str, rows: &[&str]| {
        let path = d.path().join(name);
        let mut s = String::from("path\ttext\n");
        for r in rows {
            s.push_str(&format!("{r}.wav\tA tone.\n"));
        }
        std::fs::write(&path, s).unwrap();
        path
    };
    let run = |list: &Path, out: &str| {
        let mut c = dv();
        c.args(["featurize", "--corpus", list.to_str().unwrap(), "--out", d.path().join(out).to_str().unwrap()])
            .args(["--jobs", "1"]);
        peak_rss(&mut c)
    };
    let (o, base) = run(&table("short.tsv", &["short"]), "base");
    assert!(o.status.success(), "{}", text(&o));
    let (o, hour) = run(&table("hour.tsv", &["short", "hour"]), "hour");
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("utterances     1 featurized") && out.contains("too_long             1"), "{out}");
    assert!(out.contains("  dropped: hour [too_long]: ") && out.contains("limit of 60 s"), "named: {out}");
    eprintln!("peak RSS: {base} KiB with the 3 s file alone, {hour} KiB with the one-hour file beside it");
    // The hour is refused from its header, before decoding: its 115 MB
    // never enter memory (the two runs differ by their second utterance).
    assert!(hour < base + 64 * 1024, "{hour} KiB against {base} KiB");
}
