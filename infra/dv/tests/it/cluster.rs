//! `dv recipe run --on slurm|kubernetes --emit`: the scripts and manifests it
//! writes, submitted in order by their submit.sh (against stand-ins for
//! sbatch and kubectl that record what they are asked), the manifests
//! valid for a pinned Kubernetes and for JobSet's CRD, no credential from
//! the environment in anything written or printed, and a training stage run
//! the cluster way (`dv recipe train-config`, `dv train`, then the stage
//! recorded) training nothing twice. The Dockerfiles' COPY sources and
//! install scripts exist.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Credentials that must never be written or printed.
const SECRETS: [(&str, &str); 5] = [
    ("AWS_ACCESS_KEY_ID", "AKIASENTINEL0000KEYID"),
    ("AWS_SECRET_ACCESS_KEY", "sentinel-secret-7f3a9c"),
    ("AWS_SESSION_TOKEN", "sentinel-token-b41d"),
    ("AZURE_STORAGE_ACCOUNT_KEY", "sentinel-azure-5e2f"),
    ("DV_API_KEY", "sentinel-api-key-90ab"),
];

fn dv_env(home: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dv"));
    c.args(args).env("DV_HOME", home);
    for (k, v) in SECRETS {
        c.env(k, v);
    }
    c.output().expect("run dv")
}

fn ok(o: &Output) -> String {
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{out}\n{err}");
    no_secret("dv's output", &format!("{out}{err}"));
    format!("{out}{err}")
}

fn no_secret(what: &str, text: &str) {
    for (k, v) in SECRETS {
        assert!(!text.contains(v), "{what} holds the value of {k}");
    }
}

/// Every file under `dir`, read; none may hold a credential.
fn no_secret_in(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            n += no_secret_in(&p);
        } else {
            no_secret(&p.display().to_string(), &String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
            n += 1;
        }
    }
    n
}

/// A recipe whose segmentation and WaveNet train on `cuda`, the duration model on the CPU.
fn gpu_recipe(dir: &Path) -> PathBuf {
    let c = repo().join("trainers/train/configs");
    let text = format!(
        r#"
corpus = "$DV_HOME/corpora/my-corpus"
out = "$DV_HOME/recipes/my"

[featurize]
shards = 3

[train_segmentation]
config = "{c}/segmentation-embedded.toml"
set.train = {{ steps = 100, device = "cuda" }}

[align]
device = "cuda"

[train_duration]
config = "{c}/duration-embedded-aligned.toml"

[train_wavenet]
config = "{c}/wavenet-embedded.toml"
set.train = {{ steps = 1000, device = "cuda" }}
"#,
        c = c.display()
    );
    let path = dir.join("my.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A stand-in command in `bin` that appends its arguments to `bin/calls` and runs `body`.
fn stand_in(bin: &Path, name: &str, body: &str) {
    std::fs::create_dir_all(bin).unwrap();
    let p = bin.join(name);
    std::fs::write(&p, format!("#!/bin/bash\necho \"{name} $*\" >> \"{}\"\n{body}\n", bin.join("calls").display()))
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn with_path(bin: &Path) -> String {
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

#[test]
fn recipe_emits_slurm_jobs_chained_by_afterok() {
    let d = tempfile::tempdir().unwrap();
    let (home, emit) = (d.path().join("home"), d.path().join("slurm"));
    let r = gpu_recipe(d.path());
    let printed = ok(&dv_env(
        &home,
        &["recipe", "run", r.to_str().unwrap(), "--on", "slurm", "--emit", emit.to_str().unwrap(), "--gpus", "2"]
            .into_iter()
            .chain(["--nodes", "2", "--array-limit", "2", "--partition", "gpu"])
            .collect::<Vec<_>>(),
    ));
    assert!(printed.contains("submit them with"), "{printed}");
    let read = |f: &str| std::fs::read_to_string(emit.join(f)).unwrap();
    let shards = read("02-featurize-shards.sbatch");
    assert!(shards.contains("#SBATCH --array=0-2%2\n"), "{shards}");
    assert!(shards.contains("--shard \"$SLURM_ARRAY_TASK_ID/3\""), "{shards}");
    let out = home.join("recipes/my");
    assert!(shards.contains(&format!("--out {}/features ", out.display())), "{shards}");
    let wavenet = read("07-train-wavenet.sbatch");
    for line in [
        "#SBATCH --nodes=2\n",
        "#SBATCH --ntasks-per-node=2\n",
        "#SBATCH --gpus-per-node=2\n",
        "#SBATCH --partition=gpu\n",
    ] {
        assert!(wavenet.contains(line), "{line}: {wavenet}");
    }
    assert!(wavenet.contains("srun --kill-on-bad-exit=1 \"$DV\" train --config "), "{wavenet}");
    assert!(wavenet.contains("--stage train-wavenet --stop-stage train-wavenet"), "{wavenet}");
    // The duration model trains on the CPU: in the recording process, no srun; g2p rides along.
    let duration = read("06-train-duration.sbatch");
    assert!(!duration.contains("srun") && duration.contains("--stage train-duration --stop-stage g2p"), "{duration}");
    assert!(read("05-align.sbatch").contains("#SBATCH --gpus-per-node=1\n"));
    for f in std::fs::read_dir(&emit).unwrap() {
        let p = f.unwrap().path();
        if p.is_file() {
            let o = Command::new("bash").arg("-n").arg(&p).output().unwrap();
            assert!(o.status.success(), "bash -n {}: {}", p.display(), String::from_utf8_lossy(&o.stderr));
        }
    }
    assert_eq!(no_secret_in(&emit), 9);

    // submit.sh against a stand-in sbatch that hands out ids 101, 102, ...
    let bin = d.path().join("bin");
    stand_in(&bin, "sbatch", "n=$(grep -c '^sbatch' \"$(dirname \"$0\")/calls\"); echo \"$((100 + n));cluster\"");
    let o = Command::new("bash").arg(emit.join("submit.sh")).env("PATH", with_path(&bin)).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let calls = std::fs::read_to_string(bin.join("calls")).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    let names = [
        "inspect",
        "featurize-shards",
        "featurize",
        "train-segmentation",
        "align",
        "train-duration",
        "train-wavenet",
        "export",
    ];
    assert_eq!(calls.len(), names.len(), "{calls:?}");
    for (i, (call, name)) in calls.iter().zip(names).enumerate() {
        assert!(call.ends_with(&format!("/{:02}-{name}.sbatch", i + 1)), "{call}");
        let dep = format!("--dependency=afterok:{} --kill-on-invalid-dep=yes", 100 + i);
        assert_eq!(call.contains(&dep), i > 0, "job {} waits for job {i}: {call}", i + 1);
    }
    assert!(String::from_utf8_lossy(&o.stdout).contains("08-export.sbatch 108"));

    // Without --emit: the same scripts under OUT/slurm, submitted at once.
    let mut c = Command::new(env!("CARGO_BIN_EXE_dv"));
    c.args(["recipe", "run", r.to_str().unwrap(), "--on", "slurm"]).env("DV_HOME", &home).env("PATH", with_path(&bin));
    for (k, v) in SECRETS {
        c.env(k, v);
    }
    let printed = ok(&c.output().unwrap());
    assert!(printed.contains("submitting with") && printed.contains("08-export.sbatch 116"), "{printed}");
    let calls = std::fs::read_to_string(bin.join("calls")).unwrap();
    assert_eq!(calls.lines().filter(|l| l.contains(&format!("{}/slurm/", out.display()))).count(), 8, "{calls}");
    assert_eq!(no_secret_in(&out.join("slurm")), 9);
}

#[test]
fn recipe_emits_valid_kubernetes_manifests() {
    let d = tempfile::tempdir().unwrap();
    let (home, emit) = (d.path().join("home"), d.path().join("k8s"));
    let r = gpu_recipe(d.path());
    let args = [
        "recipe",
        "run",
        r.to_str().unwrap(),
        "--on",
        "kubernetes",
        "--emit",
        emit.to_str().unwrap(),
        "--gpus",
        "4",
        "--recipe-in-image",
        "/opt/recipes/my.toml",
        "--corpus-url",
        "s3://corpora/my-corpus",
    ];
    ok(&dv_env(&home, &args));
    // Without --emit there is nothing to apply.
    let o = dv_env(&home, &args[..5]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("--emit"));
    let read = |f: &str| std::fs::read_to_string(emit.join(f)).unwrap();
    let shards = read("02-featurize-shards.yaml");
    for s in [
        "completionMode: Indexed",
        "completions: 3",
        "--shard \"$JOB_COMPLETION_INDEX/3\"",
        "--out /dv/recipes/my/features",
    ] {
        assert!(shards.contains(s), "{s}: {shards}");
    }
    let wavenet = read("07-train-wavenet.yaml");
    for s in [
        "kind: JobSet",
        "clusterIP: None",
        "subdomain: dv-my-train-wavenet\n",
        "export RANK=\"$JOB_COMPLETION_INDEX\"",
        "value: dv-my-train-wavenet-rank-0-0.dv-my-train-wavenet\n",
        "completions: 4\n",
        "nvidia.com/gpu: 1\n",
        "dv recipe train-config /opt/recipes/my.toml --stage train-wavenet",
    ] {
        assert!(wavenet.contains(s), "{s}: {wavenet}");
    }
    let serve = read("serve.yaml");
    for s in ["--public", "path: /readyz", "path: /healthz", "prometheus.io/scrape: \"true\"", "/dv/recipes/my"] {
        assert!(serve.contains(s), "{s}: {serve}");
    }
    let cron = read("retrain-cronjob.yaml");
    assert!(cron.contains("s3://corpora/my-corpus") && cron.contains("/dv/corpora/my-corpus"), "{cron}");
    assert!(cron.contains("exec dv recipe run /opt/recipes/my.toml\n"), "{cron}");
    assert_eq!(no_secret_in(&emit), 11);

    // Both the emitted and the hand-written manifests, strictly.
    let o = Command::new("python3")
        .arg(repo().join("infra/k8s/test/validate.py"))
        .arg(&emit)
        .arg(repo().join("infra/k8s"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    // 8 stages (the 2 on GPUs a JobSet and its Service), the CronJob, serve's Deployment and
    // Service; infra/k8s: a PVC, a Job, a Service and a JobSet, a Deployment and a Service.
    assert!(out.contains("19 passed, 0 failed"), "{out}");
    assert_eq!(out.matches("(JobSet v0.12.0 CRD)").count(), 3, "{out}");

    // A manifest with an unknown field fails.
    let bad = d.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("x.yaml"), wavenet.replace("enableDNSHostnames", "enableDnsHostnames")).unwrap();
    std::fs::write(bad.join("y.yaml"), shards.replace("completionMode", "completionsMode")).unwrap();
    let o = Command::new("python3").arg(repo().join("infra/k8s/test/validate.py")).arg(&bad).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success() && out.contains("'enableDnsHostnames' was unexpected"), "{out}");
    assert!(out.contains("'completionsMode' was unexpected") && out.contains("1 passed, 2 failed"), "{out}");

    // submit.sh against a stand-in kubectl whose objects complete at once.
    let bin = d.path().join("bin");
    stand_in(
        &bin,
        "kubectl",
        "case \"$1\" in get) case \"$2\" in jobset/*) echo Completed;; job/*) echo 'SuccessCriteriaMet Complete';; esac;; esac",
    );
    let o = Command::new("bash").arg(emit.join("submit.sh")).env("PATH", with_path(&bin)).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let calls = std::fs::read_to_string(bin.join("calls")).unwrap();
    let created: Vec<&str> = calls.lines().filter(|l| l.starts_with("kubectl create")).collect();
    assert_eq!(created.len(), 8, "{calls}");
    assert!(created[1].ends_with("/02-featurize-shards.yaml") && created[7].ends_with("/08-export.yaml"), "{calls}");
    // Each object is waited for before the next is created.
    let lines: Vec<&str> = calls.lines().collect();
    let wavenet_created =
        lines.iter().position(|l| l.starts_with("kubectl create") && l.ends_with("07-train-wavenet.yaml")).unwrap();
    let export_created =
        lines.iter().position(|l| l.starts_with("kubectl create") && l.ends_with("08-export.yaml")).unwrap();
    let waited = lines.iter().position(|l| l.contains("get jobset/dv-my-train-wavenet")).unwrap();
    assert!(wavenet_created < waited && waited < export_created, "{calls}");
}

/// The cluster way of a training stage (a run config from `dv recipe
/// train-config`, `dv train` on it, then the stage recorded) trains once:
/// the recorded stage resumes at the last step. A dry run and the stages'
/// logs hold no credential.
#[test]
fn recipe_train_config_is_the_run_its_stage_records() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let corpus = d.path().join("slt");
    ok(&dv_env(&home, &["corpus", "make-default", "--utterances", "6", "--out", corpus.to_str().unwrap()]));
    let c = repo().join("trainers/train/configs");
    let out = d.path().join("out");
    let r = d.path().join("r.toml");
    std::fs::write(
        &r,
        format!(
            r#"
corpus = "{corpus}"
out = "{out}"
labels = "corpus"
[featurize]
jobs = 1
[train_segmentation]
config = "{c}/segmentation-embedded.toml"
set.model.sizes = {{ conv_channels = 2, gru = 16, gru_layers = 1 }}
set.train = {{ steps = 3, batch = 2, log_every = 1, validate_every = 0, threads_per_rank = 1 }}
set.checkpoint = {{ every = 3, keep_last = 1 }}
[train_duration]
config = "{c}/duration-embedded-aligned.toml"
[train_wavenet]
config = "{c}/wavenet-embedded-cpu.toml"
"#,
            corpus = corpus.display(),
            out = out.display(),
            c = c.display()
        ),
    )
    .unwrap();
    let rs = r.to_str().unwrap();
    let dry = ok(&dv_env(&home, &["recipe", "run", rs, "--dry-run"]));
    assert!(dry.contains("dry run: 10 stage(s) would run"), "{dry}");
    // Before featurize has run, the key of train-segmentation is unknown.
    let cfg = d.path().join("seg.toml");
    let o =
        dv_env(&home, &["recipe", "train-config", rs, "--stage", "train-segmentation", "--out", cfg.to_str().unwrap()]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("featurize has not run"));
    ok(&dv_env(&home, &["recipe", "run", rs, "--stop-stage", "featurize"]));
    ok(&dv_env(
        &home,
        &["recipe", "train-config", rs, "--stage", "train-segmentation", "--out", cfg.to_str().unwrap()],
    ));
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(text.contains(&format!("{}/runs/train-segmentation/", out.display())), "{text}");
    ok(&dv_env(&home, &["train", "--config", cfg.to_str().unwrap()]));
    let printed = ok(&dv_env(
        &home,
        &["recipe", "run", rs, "--stage", "train-segmentation", "--stop-stage", "train-segmentation"],
    ));
    assert!(printed.contains("train-segmentation: running (no lock entry)"), "{printed}");
    let log = std::fs::read_to_string(out.join("logs/train-segmentation.log")).unwrap();
    assert!(log.contains("(step 3)") && log.contains("steps 3 to 3"), "the recorded stage resumed at the end: {log}");
    let ck = std::fs::read_dir(out.join("runs/train-segmentation")).unwrap().count();
    assert_eq!(ck, 1, "one run directory");
    no_secret_in(&out.join("logs"));
    no_secret_in(&out);
}

/// The Dockerfiles can be built from the repository root: every COPY source
/// exists, and every RUN line that calls infra/install.sh names a function it has.
#[test]
fn dockerfiles_copy_what_exists_and_call_the_install_script() {
    let root = repo();
    let install = std::fs::read_to_string(root.join("infra/install.sh")).unwrap();
    for file in ["infra/docker/train.Dockerfile", "infra/docker/serve.Dockerfile"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let joined = text.replace("\\\n", " ");
        let mut calls = 0;
        for line in joined.lines().map(str::trim) {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.first() {
                Some(&"COPY") if !words.iter().any(|w| w.starts_with("--from")) => {
                    let args: Vec<&str> = words[1..].iter().filter(|w| !w.starts_with("--")).copied().collect();
                    for src in &args[..args.len() - 1] {
                        assert!(root.join(src).exists(), "{file}: COPY {src}: no such path in the repository");
                    }
                }
                Some(&"RUN") => {
                    for (i, w) in words.iter().enumerate() {
                        if w.ends_with("infra/install.sh") {
                            let f = words.get(i + 1).unwrap_or_else(|| panic!("{file}: {line}"));
                            assert!(install.contains(&format!("\n{f}() {{")), "{file}: infra/install.sh has no {f}");
                            calls += 1;
                        }
                    }
                }
                _ => {}
            }
        }
        assert!(calls >= 1, "{file} installs through infra/install.sh");
    }
    // infra/run takes its install steps from the same script.
    let run = std::fs::read_to_string(root.join("infra/run")).unwrap();
    assert!(run.contains("source \"$here/infra/install.sh\""), "infra/run sources infra/install.sh");
}
