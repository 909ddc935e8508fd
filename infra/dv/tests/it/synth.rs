//! The WaveNet path end to end on a small embedded corpus: train a tiny
//! WaveNet on its chunks for a few steps, `dv export` it, prove the
//! libtorch-free networks reproduce the trainer's golden outputs, and
//! `dv synth` an utterance into a WAV.

use std::path::Path;

use dv_torch::tch;

use super::dv;

fn ok(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn config(dir: &Path, features: &Path) -> std::path::PathBuf {
    let text = format!(
        r#"
[model]
kind = "wavenet"
preset = "tiny"

[data]
kind = "chunks"
url = "{features}"
validation_fraction = 0.0

[optimizer]
lr = 1e-3

[schedule]
rate = 0.9886
every = 1000

[train]
steps = 2
batch = 2
threads_per_rank = 1

[checkpoint]
url = "{ck}"
every = 2
keep_last = 1
"#,
        features = features.display(),
        ck = dir.join("ck").display(),
    );
    let path = dir.join("wavenet.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn max_diff(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (*x as f64 - *y as f64).abs()).fold(0.0, f64::max)
}

#[test]
fn train_export_check_parity_and_synthesize() {
    let d = tempfile::tempdir().unwrap();
    let corpus = d.path().join("slt");
    let features = d.path().join("features");
    ok(&dv(&["corpus", "make-default", "--utterances", "4", "--out", corpus.to_str().unwrap()]));
    ok(&dv(&["featurize", "--corpus", corpus.to_str().unwrap(), "--out", features.to_str().unwrap()]));
    ok(&dv(&["train", "--config", config(d.path(), &features).to_str().unwrap()]));
    let voice = d.path().join("voice");
    let ck = d.path().join("ck/step-0000000002.safetensors");
    let printed = ok(&dv(&["export", "--checkpoint", ck.to_str().unwrap(), "--out", voice.to_str().unwrap()]));
    assert!(printed.contains("WaveNet 4x8x16"), "{printed}");

    // The package reads back complete, and the CPU networks reproduce the
    // trainer's golden outputs (float32 tolerance).
    let v = dv_voice::Voice::read(&voice).unwrap();
    assert_eq!(v.config().lineage.step, 2);
    assert!(v.config().f0.min_hz > 50.0 && v.config().f0.max_hz < 600.0, "{:?}", v.config().f0);
    let g = v.golden().expect("dv export writes golden outputs");
    assert_eq!(g.samples.len(), 8 * 64);
    let cond = dv_synth::ConditioningNetwork::new(&v).unwrap().forward(g.features.data()).unwrap();
    let dc = max_diff(cond.data(), g.conditioning.data());
    assert!(dc < 1e-5, "conditioning differs from the trainer's by {dc}");
    let logit_scale = g.logits.data().iter().fold(0.0f64, |m, x| m.max(x.abs() as f64));
    assert!(logit_scale > 1e-3, "golden logits are all ~0: the check would be vacuous");
    for kernel in [dv_synth::Kernel::Scalar, dv_synth::Kernel::detect()] {
        let s = dv_synth::Sampler::new(&v, kernel, dv_synth::SamplerOptions::default()).unwrap();
        let mut scratch = s.make_scratch();
        let mut logits = vec![0.0f32; g.logits.data().len()];
        s.logits(&mut scratch, &cond, &g.samples, &mut logits).unwrap();
        let dl = max_diff(&logits, g.logits.data());
        assert!(dl < 1e-4 * logit_scale.max(1.0), "{kernel:?}: logits differ from the trainer's by {dl}");
    }

    // Speak the first utterance (0.5 s of it) from its reference phones and F0.
    let wav = d.path().join("out.wav");
    let printed = ok(&dv(&[
        "synth",
        "--voice",
        voice.to_str().unwrap(),
        "--features",
        features.to_str().unwrap(),
        "--utterance",
        "slt_fortune_00001",
        "--max-seconds",
        "0.5",
        "--seed",
        "3",
        "-o",
        wav.to_str().unwrap(),
    ]));
    assert!(printed.contains("0.50 s at 16384 Hz"), "{printed}");
    let bytes = std::fs::read(&wav).unwrap();
    assert_eq!(&bytes[..4], b"RIFF");
    assert_eq!(u32::from_le_bytes(bytes[24..28].try_into().unwrap()), 16384);
    assert_eq!(u32::from_le_bytes(bytes[40..44].try_into().unwrap()) as usize, 8192 * 2);
    assert_eq!(bytes.len(), 44 + 8192 * 2);
    let pcm: Vec<i16> = bytes[44..].chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect();
    assert!(pcm.iter().any(|&v| v != pcm[0]), "the synthesized audio is constant");
    // Text needs the duration/F0 model: refused with the reason.
    let o = dv(&["synth", "--voice", voice.to_str().unwrap(), "-o", wav.to_str().unwrap(), "hello world"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("duration/F0"), "{}", String::from_utf8_lossy(&o.stderr));

    // Train a tiny duration/F0 model, add it to the package, speak text.
    let dcfg = d.path().join("duration.toml");
    std::fs::write(
        &dcfg,
        format!(
            "[model]\nkind = \"duration\"\npreset = \"tiny\"\n[data]\nkind = \"prosody\"\nurl = \"{}\"\nvalidation_fraction = 0.0\n\
             [optimizer]\nlr = 3e-4\n[schedule]\nrate = 0.9886\nevery = 400\n[train]\nsteps = 3\nbatch = 2\nthreads_per_rank = 1\n\
             [checkpoint]\nurl = \"{}\"\nevery = 3\nkeep_last = 1\n",
            features.display(),
            d.path().join("dck").display()
        ),
    )
    .unwrap();
    ok(&dv(&["train", "--config", dcfg.to_str().unwrap()]));
    let dck = d.path().join("dck/step-0000000003.safetensors");
    let metrics = ok(&dv(&["evaluate", "--checkpoint", dck.to_str().unwrap(), "--train-split"]));
    assert!(metrics.contains("duration MAE") && metrics.contains("4 utterances"), "{metrics}");
    let text_voice = d.path().join("text-voice");
    ok(&dv(&[
        "export",
        "--voice",
        voice.to_str().unwrap(),
        "--duration",
        dck.to_str().unwrap(),
        "--out",
        text_voice.to_str().unwrap(),
    ]));
    let tv = dv_voice::Voice::read(&text_voice).unwrap();
    let dc = tv.config().duration.as_ref().expect("the package has a duration model");
    assert!(!dc.stress && !tv.config().conditioning.stress, "the embedded corpus's labels carry no stress");
    assert!(tv.golden().and_then(|g| g.duration.as_ref()).is_some(), "duration golden outputs are written");
    let printed = ok(&dv(&[
        "synth",
        "--voice",
        text_voice.to_str().unwrap(),
        "-o",
        wav.to_str().unwrap(),
        "Hello world. Good bye!",
    ]));
    assert!(printed.contains("wrote"), "{printed}");
    let bytes = std::fs::read(&wav).unwrap();
    let n = u32::from_le_bytes(bytes[40..44].try_into().unwrap()) as usize / 2;
    assert!(n > 0 && bytes.len() == 44 + 2 * n, "{} bytes for {n} samples", bytes.len());
    // A word the lexicon lacks is named.
    let o = dv(&["synth", "--voice", text_voice.to_str().unwrap(), "-o", wav.to_str().unwrap(), "zxqvbnm"]);
    assert!(
        !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("zxqvbnm"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // A tiny G2P model trained for a few steps on CMUDict: added to the
    // package with golden words, it pronounces the word the lexicon lacks.
    let gcfg = d.path().join("g2p.toml");
    std::fs::write(
        &gcfg,
        format!(
            "[model]\nkind = \"g2p\"\npreset = \"tiny\"\n[data]\nkind = \"lexicon\"\n[optimizer]\nlr = 1e-3\n\
             [schedule]\nrate = 0.85\nevery = 1000\n[train]\nsteps = 3\nbatch = 8\nthreads_per_rank = 1\n\
             [checkpoint]\nurl = \"{}\"\nevery = 3\nkeep_last = 1\n",
            d.path().join("gck").display()
        ),
    )
    .unwrap();
    ok(&dv(&["train", "--config", gcfg.to_str().unwrap()]));
    let gck = d.path().join("gck/step-0000000003.safetensors");
    // PER/WER of the model alone and of an ensemble of it with itself (the same decoding);
    // a duration checkpoint is refused as an ensemble member, by name.
    let g = gck.to_str().unwrap();
    let rates =
        |s: &str| s.lines().next().and_then(|l| l.split(": ").nth(1)).map(|r| r[..r.find(" (").unwrap()].to_string());
    let errors = d.path().join("errors.tsv");
    let alone = ok(&dv(&["evaluate", "--checkpoint", g, "--limit", "30", "--errors", errors.to_str().unwrap()]));
    // --errors lists exactly the wrongly decoded words: WER × 30 rows after the header.
    let wer: f64 = alone.split("WER ").nth(1).and_then(|r| r.split('%').next()).unwrap().parse().unwrap();
    let tsv = std::fs::read_to_string(&errors).unwrap();
    let rows: Vec<&str> = tsv.lines().skip(1).collect();
    assert_eq!(rows.len(), (wer * 30.0 / 100.0).round() as usize, "{alone}\n{tsv}");
    assert!(tsv.starts_with("word\treference\thypothesis\t"), "{tsv}");
    assert!(
        rows.iter().all(|r| r.split('\t').count() == 5 && r.split('\t').nth(3).unwrap().parse::<usize>().unwrap() > 0),
        "{tsv}"
    );
    let twice = ok(&dv(&["evaluate", "--checkpoint", g, "--with", g, "--limit", "30"]));
    assert!(twice.contains("ensemble of 2") && rates(&alone).is_some(), "{alone}\n{twice}");
    assert_eq!(rates(&alone), rates(&twice), "{alone}\n{twice}");
    assert_eq!(alone.lines().nth(1), twice.lines().nth(1), "the metrics' JSON (mean score, rates without stress)");
    let o = dv(&["evaluate", "--checkpoint", g, "--with", dck.to_str().unwrap(), "--limit", "30"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains(dck.to_str().unwrap()) && err.contains("lexicon"), "{err}");
    let g2p_voice = d.path().join("g2p-voice");
    let printed = ok(&dv(&[
        "export",
        "--voice",
        text_voice.to_str().unwrap(),
        "--g2p",
        gck.to_str().unwrap(),
        "--golden-words",
        "5",
        "--out",
        g2p_voice.to_str().unwrap(),
    ]));
    assert!(printed.contains("5 golden words"), "{printed}");
    let pron = ok(&dv(&["g2p", "--voice", g2p_voice.to_str().unwrap(), "zxqvbnm", "hello"]));
    assert!(pron.contains("zxqvbnm\tg2p\t") && pron.contains("hello\tlexicon\tHH"), "{pron}");
    let o = dv(&[
        "synth",
        "--voice",
        g2p_voice.to_str().unwrap(),
        "-o",
        wav.to_str().unwrap(),
        "--max-seconds",
        "0.2",
        "zxqvbnm",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("golden parity of the G2P model: 0 of 5 words"), "{err}");
}

/// A G2P model with attention (beyond §3.1) goes into a voice package, and
/// the libtorch-free G2P of `dv-synth` reproduces the trainer's
/// teacher-forced distributions and its beam search (golden words).
#[test]
fn an_attention_g2p_exports_and_matches_the_trainer() {
    let d = tempfile::tempdir().unwrap();
    let base = d.path().join("base");
    let wavenet = dv_voice::WavenetConfig { layers: 2, residual_channels: 8, skip_channels: 8, dilation_cycle: 2 };
    let v = dv_synth::random::random_voice(wavenet, 1).unwrap();
    let width = v.config().conditioning_width();
    // Golden outputs (placeholders here) are what the G2P's golden words join.
    let golden = dv_voice::Golden {
        features: dv_voice::Tensor::zeros(vec![1, 227]),
        conditioning: dv_voice::Tensor::zeros(vec![1, width]),
        samples: vec![128; 4],
        logits: dv_voice::Tensor::zeros(vec![4, 256]),
        duration: None,
        g2p: None,
    };
    v.with_golden(golden).unwrap().save(&base).unwrap();
    let gcfg = d.path().join("g2p.toml");
    std::fs::write(
        &gcfg,
        format!(
            "[model]\nkind = \"g2p\"\n[model.sizes]\nembed = 8\nhidden = 16\nlayers = 2\nbeam = 5\ndropout = 0.0\n\
             attention = true\n[data]\nkind = \"lexicon\"\n[optimizer]\nlr = 1e-2\n\
             [schedule]\nrate = 0.85\nevery = 1000\n[train]\nsteps = 20\nbatch = 16\nthreads_per_rank = 1\n\
             [checkpoint]\nurl = \"{}\"\nevery = 20\nkeep_last = 1\n",
            d.path().join("gck").display()
        ),
    )
    .unwrap();
    ok(&dv(&["train", "--config", gcfg.to_str().unwrap()]));
    let gck = d.path().join("gck/step-0000000020.safetensors");
    let voice_dir = d.path().join("voice");
    let printed = ok(&dv(&[
        "export",
        "--voice",
        base.to_str().unwrap(),
        "--g2p",
        gck.to_str().unwrap(),
        "--golden-words",
        "8",
        "--out",
        voice_dir.to_str().unwrap(),
    ]));
    assert!(printed.contains("with attention") && printed.contains("8 golden words"), "{printed}");
    let voice = dv_voice::Voice::read(&voice_dir).unwrap();
    assert!(voice.config().g2p.as_ref().unwrap().attention);
    let synth = dv_synth::G2p::new(&voice).unwrap();
    assert_eq!(synth.golden_parity(&voice).unwrap(), Some(0), "beam search differs from the trainer's");

    // The trainer's model, teacher-forced, against dv-synth's log-probabilities.
    let name = gck.display().to_string();
    let ck = dv_train::checkpoint::decode(&name, &std::fs::read(&gck).unwrap()).unwrap();
    let cfg = dv_train::RunConfig::from_toml("g2p", &ck.state.config).unwrap();
    let model = dv_train::G2p::new(&cfg.g2p_sizes("g2p").unwrap(), tch::Device::Cpu).unwrap();
    dv_train::checkpoint::load_model_weights(&name, &ck, &model).unwrap();
    let outputs = voice.config().g2p.as_ref().unwrap().outputs;
    for (word, toks) in [("hello", vec![5usize, 200, 1, 77]), ("o'neill", vec![12, 3]), ("x", vec![])] {
        let letters: Vec<i64> = synth.encode_word(word).unwrap().iter().map(|&l| l as i64).collect();
        let n = letters.len() as i64;
        let x = tch::Tensor::from_slice(&letters).view([1, n]);
        let enc = tch::no_grad(|| model.encode(&x, &[n], false, 0, &[0])).unwrap();
        let inputs: Vec<i64> = std::iter::once(outputs as i64).chain(toks.iter().map(|&t| t as i64)).collect();
        let t = inputs.len() as i64;
        let (logits, _) = tch::no_grad(|| {
            model.decode(&tch::Tensor::from_slice(&inputs).view([1, t]), &enc.states, &enc, false, 0, &[0])
        })
        .unwrap();
        let want = Vec::<f32>::try_from(logits.log_softmax(-1, tch::Kind::Float).view([-1])).unwrap();
        let got = synth.log_probs(word, &toks).unwrap();
        assert_eq!(got.len(), want.len());
        let max = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(max < 1e-4, "{word}: max |Δ log p| = {max}");
    }
}

/// `--device` and `--sampling` are read by clap (one `--device` spelling for
/// every command, `dv_synth::Sampling`'s parser): a value the command cannot
/// use fails before anything is loaded, naming the flag and the value.
#[test]
fn device_and_sampling_values_are_refused_naming_the_flag() {
    let refused = |args: &[&str], want: &[&str]| {
        let o = dv(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        for w in want {
            assert!(err.contains(w), "{args:?}: no {w:?} in {err}");
        }
    };
    let never = std::env::temp_dir().join("dv-never-written.wav");
    let synth = ["synth", "--voice", "/nonexistent", "-o", never.to_str().unwrap()];
    let with = |extra: &[&'static str]| [&synth[..], extra].concat();
    assert!(!never.exists());
    refused(&with(&["--device", "cuda:1"]), &["'cuda:1'", "--device", "GPU 0 only: cpu or cuda"]);
    refused(&with(&["--device", "gpu"]), &["'gpu'", "--device", "not cpu, cuda or cuda:N"]);
    refused(
        &with(&["--sampling", "bogus"]),
        &["'bogus'", "--sampling", "one of direct, temperature:T, voiced-temperature:T, mean, mode, top-k:K"],
    );
    refused(
        &with(&["--sampling", "temperature:0"]),
        &["--sampling", "invalid temperature: 0 is not a positive number"],
    );
    refused(&with(&["--sampling", "top-k:2.5"]), &["--sampling", "top-k:2.5: k must be a whole number"]);
    let align = ["align", "--features", "/nonexistent", "--checkpoint", "/nonexistent", "--out", "/nonexistent"];
    refused(&[&align[..], &["--device", "cuda:x"]].concat(), &["'cuda:x'", "--device", "not cpu, cuda or cuda:N"]);
    refused(&["evaluate", "--checkpoint", "/nonexistent", "--device", "gpu"], &["'gpu'", "--device"]);
    // Accepted values get past clap: the missing voice is what fails.
    for (flag, value) in
        [("--device", "cuda"), ("--device", "cpu"), ("--sampling", "top-k:3"), ("--sampling", "temperature:0.7")]
    {
        let o = dv(&with(&[flag, value]));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{flag} {value}: {err}");
        assert!(err.contains("/nonexistent"), "{flag} {value}: {err}");
    }
}

/// `--speed` (OpenAI's `speed`, as `dv-serve` reads it) scales the duration
/// model's durations: at 0.5 the shipped voice plans about twice the frames
/// of 1.0 for the same text; outside 0.25..=4 it is refused, naming it.
#[test]
fn speed_scales_the_planned_frames_and_bad_values_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let frames = |speed: &str| {
        let wav = d.path().join(format!("speed-{speed}.wav"));
        // --max-seconds: the plan is what is compared; sampling stops at once.
        let o = dv(&[
            "synth",
            "--f32",
            "--threads",
            "1",
            "--max-seconds",
            "0.01",
            "--speed",
            speed,
            "-o",
            wav.to_str().unwrap(),
            "Please turn left at the next traffic light.",
        ]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "--speed {speed}: {err}");
        let n = err.split(" frames (").next().and_then(|h| h.rsplit(' ').next()).and_then(|n| n.parse::<f64>().ok());
        n.unwrap_or_else(|| panic!("no frame count in {err}"))
    };
    let (normal, slow) = (frames("1"), frames("0.5"));
    let ratio = slow / normal;
    assert!((1.8..=2.2).contains(&ratio), "{slow} frames at 0.5 against {normal} at 1: {ratio}");
    let o = dv(&["synth", "--speed", "5", "-o", d.path().join("x.wav").to_str().unwrap(), "Hello."]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("speed") && err.contains("0.25..=4"), "{err}");
}

/// `-o -` streams the WAV to standard output as it is sampled (size fields
/// 0xFFFFFFFF; the summary on stderr), the same samples a file gets; flags
/// that cannot work are refused before the voice loads and the sampler is
/// calibrated, naming the flag, and no file is left behind.
#[test]
fn standard_output_takes_a_streamed_wav_and_bad_flags_fail_before_loading() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("x.wav");
    let args = |out: &str| -> Vec<String> {
        ["synth", "--f32", "--threads", "1", "--max-seconds", "0.3", "-o", out, "Hello there."]
            .map(String::from)
            .to_vec()
    };
    let piped = dv(&args("-").iter().map(String::as_str).collect::<Vec<_>>());
    let err = String::from_utf8_lossy(&piped.stderr);
    assert!(piped.status.success(), "{err}");
    assert!(err.contains("wrote standard output: 0.30 s"), "{err}");
    let wav = &piped.stdout;
    assert_eq!(&wav[0..4], b"RIFF");
    assert_eq!(&wav[4..8], &u32::MAX.to_le_bytes(), "a streamed RIFF size");
    assert_eq!(&wav[40..44], &u32::MAX.to_le_bytes(), "a streamed data size");
    assert_eq!((wav.len() - 44) / 2, (0.3 * 16384.0) as usize, "--max-seconds 0.3 of samples");
    let o = dv(&args(file.to_str().unwrap()).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let written = std::fs::read(&file).unwrap();
    assert_eq!(&written[44..], &wav[44..], "the file's samples and the stream's");

    let refused = |extra: &[&str], want: &str| {
        let mut a = vec!["synth", "-o"];
        a.extend_from_slice(extra);
        a.push("Hello.");
        let o = dv(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{a:?}: {err}");
        assert!(err.contains(want), "{a:?}: no {want:?} in {err}");
        assert!(!err.contains("calibration") && !err.contains("voice "), "{a:?}: refused only after loading: {err}");
    };
    let out = d.path().join("y.wav");
    let out = out.to_str().unwrap();
    refused(&[out, "--threads", "4"], "--threads 4: the CPU sampler runs on 1 thread or 2");
    refused(&[out, "--max-seconds=-1"], "--max-seconds -1: not a positive number of seconds");
    refused(&[out, "--max-seconds", "0"], "--max-seconds 0: not a positive number of seconds");
    let missing = d.path().join("no/such/folder/z.wav");
    refused(
        &[missing.to_str().unwrap()],
        &format!("the folder {} does not exist", d.path().join("no/such/folder").display()),
    );
    refused(&[d.path().to_str().unwrap()], "is a folder; give the WAV file's name");
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["x.wav"], "nothing but the one WAV written");
}
