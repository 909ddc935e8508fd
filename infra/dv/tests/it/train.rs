//! `dv train` killed with SIGKILL mid-run and started again continues with
//! exactly the losses of a run that was never interrupted.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dv_process_group::ProcessGroup;

/// A tiny synthetic segmentation run of `steps` steps in `dir`, with its
/// checkpoints under `dir/ck` ([`train_config`]).
fn write_config(dir: &Path, steps: u64) -> std::path::PathBuf {
    train_config(dir, &dir.join("ck"), steps)
}

/// A tiny synthetic segmentation run of `steps` steps: `dir/run.toml`,
/// metrics in `dir/metrics.jsonl`, a checkpoint every 5 steps to
/// `checkpoints` (the last 2 kept).
pub(crate) fn train_config(dir: &Path, checkpoints: &Path, steps: u64) -> std::path::PathBuf {
    let text = format!(
        r#"
[model]
kind = "segmentation"
preset = "tiny"

[data]
kind = "synthetic"
examples = 96
features = 20
classes = 16
seed = 5

[optimizer]
lr = 3e-3

[schedule]
rate = 0.9
every = 20

[train]
steps = {steps}
batch = 8
seed = 1

[checkpoint]
url = "{ck}"
every = 5
keep_last = 2

[tracking]
jsonl = "{jsonl}"
"#,
        ck = checkpoints.display(),
        jsonl = dir.join("metrics.jsonl").display()
    );
    let path = dir.join("run.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Each logged step's loss, as bits, from a metrics JSONL file.
pub(crate) fn losses(path: &Path) -> Vec<(u64, u64)> {
    let mut by_step = std::collections::BTreeMap::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        by_step.insert(v["step"].as_u64().unwrap(), v["loss"].as_f64().unwrap().to_bits());
    }
    by_step.into_iter().collect()
}

fn train(config: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dv"));
    c.args(["train", "--config", config.to_str().unwrap(), "--ranks", "2"]);
    c
}

#[test]
fn train_killed_with_sigkill_resumes_with_identical_losses() {
    let steps = 80;
    let whole = tempfile::tempdir().unwrap();
    let o = train(&write_config(whole.path(), steps)).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = losses(&whole.path().join("metrics.jsonl"));
    assert_eq!(want.len(), steps as usize);

    let d = tempfile::tempdir().unwrap();
    let config = write_config(d.path(), steps);
    // A group, so that a failed assertion below still ends the run.
    let mut child = ProcessGroup::spawn(train(&config).stdout(Stdio::null()).stderr(Stdio::null())).unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let n = std::fs::read_dir(d.path().join("ck")).map(|r| r.count()).unwrap_or(0);
        if n >= 1 {
            // Let it run a little past the checkpoint, then SIGKILL the group and reap it.
            std::thread::sleep(Duration::from_millis(30));
            child.kill().unwrap();
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "the run finished before it could be killed");
        assert!(Instant::now() < deadline, "no checkpoint appeared");
        std::thread::sleep(Duration::from_millis(2));
    }
    let before = losses(&d.path().join("metrics.jsonl")).len();
    assert!(before < steps as usize, "killed mid-run ({before} steps logged)");
    let o = train(&config).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("resumed from"), "{err}");
    assert_eq!(losses(&d.path().join("metrics.jsonl")), want, "losses after kill -9 and resume differ");
    // No temporary or partial object is left among the checkpoints.
    for e in std::fs::read_dir(d.path().join("ck")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        assert!(name.starts_with("step-") && name.ends_with(".safetensors"), "{name}");
    }
}

#[test]
fn plot_draws_the_loss_curve_of_a_run_to_png() {
    let d = tempfile::tempdir().unwrap();
    let o = train(&write_config(d.path(), 12)).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let metrics = d.path().join("metrics.jsonl");
    // A garbage line is skipped and reported, not fatal.
    let mut text = std::fs::read_to_string(&metrics).unwrap();
    text.push_str("not json\n");
    std::fs::write(&metrics, text).unwrap();
    let png = d.path().join("loss.png");
    let o = super::dv(&["plot", metrics.to_str().unwrap(), "--out", png.to_str().unwrap(), "--size", "640x400"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(super::stdout(&o).contains("12 points of loss"), "{}", super::stdout(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("skipped 1 line"));
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    // IHDR: width and height, big-endian, at bytes 16..24.
    assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), 640);
    assert_eq!(u32::from_be_bytes(bytes[20..24].try_into().unwrap()), 400);
    let o = super::dv(&["plot", metrics.to_str().unwrap(), "--metric", "nope", "--out", png.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("none of the metrics"));
}

#[test]
fn steps_on_the_command_line_override_the_config_and_extend_a_finished_run() {
    let d = tempfile::tempdir().unwrap();
    let config = write_config(d.path(), 40);
    let o = train(&config).args(["--steps", "5"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(losses(&d.path().join("metrics.jsonl")).len(), 5);
    // The same run continued to 8 steps resumes at 5.
    let o = train(&config).args(["--steps", "8"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("resumed from"), "{err}");
    assert_eq!(losses(&d.path().join("metrics.jsonl")).len(), 8);
    let o = train(&config).args(["--steps", "0"]).output().unwrap();
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("--steps must be at least 1"));
}

/// SIGTERM (a scheduler's preemption or time-limit warning) stops `dv train`
/// after the current step on every rank, with a checkpoint of that step,
/// and exit status 75; run again, it resumes there and ends with exactly
/// the losses of a run never interrupted.
#[test]
fn train_stopped_by_sigterm_checkpoints_and_resumes_with_identical_losses() {
    let steps = 400;
    // No periodic checkpoint before the end: the one the stop writes is the only one.
    let config = |dir: &Path| {
        let path = write_config(dir, steps);
        let text = std::fs::read_to_string(&path).unwrap().replace("every = 5\n", "every = 1000\n");
        std::fs::write(&path, text).unwrap();
        path
    };
    let whole = tempfile::tempdir().unwrap();
    let o = train(&config(whole.path())).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = losses(&whole.path().join("metrics.jsonl"));
    assert_eq!(want.len(), steps as usize);

    let d = tempfile::tempdir().unwrap();
    let cfg = config(d.path());
    let log = std::fs::File::create(d.path().join("stderr")).unwrap();
    let mut child = ProcessGroup::spawn(train(&cfg).stdout(Stdio::null()).stderr(log)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::read_to_string(d.path().join("metrics.jsonl")).map_or(0, |t| t.lines().count()) < 5 {
        assert!(child.try_wait().unwrap().is_none(), "the run finished before it could be stopped");
        assert!(Instant::now() < deadline, "no steps logged");
        std::thread::sleep(Duration::from_millis(2));
    }
    let status = child.stop().unwrap(); // SIGTERM, then SIGKILL after the group's grace
    let err = std::fs::read_to_string(d.path().join("stderr")).unwrap();
    assert_eq!(status.code(), Some(75), "{status}: {err}");
    let checkpoints: Vec<String> = std::fs::read_dir(d.path().join("ck"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("step-"))
        .collect();
    assert_eq!(checkpoints.len(), 1, "{checkpoints:?}");
    let at: u64 = checkpoints[0].trim_start_matches("step-").trim_end_matches(".safetensors").parse().unwrap();
    assert!(at >= 5 && at < steps, "stopped mid-run at step {at}");
    assert!(err.contains(&format!("stopped on SIGTERM after step {at} ")), "{err}");
    assert_eq!(losses(&d.path().join("metrics.jsonl")).len() as u64, at, "every rank stopped after step {at}");

    let o = train(&cfg).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&format!("(step {at})")), "resumed from the stop's checkpoint: {err}");
    assert_eq!(losses(&d.path().join("metrics.jsonl")), want, "losses after SIGTERM and resume differ");
}
