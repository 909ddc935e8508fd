//! `dv export`: a trained WaveNet checkpoint → a voice package
//! (`inference/voice/FORMAT.md`): `config.json`, `model.safetensors` and
//! `golden.safetensors`, the only thing the inference side reads.
//!
//! The F0 normalization is recomputed from the featurize output the run
//! trained on, exactly as training computed it (`dv_train::Chunks`), and
//! the golden outputs come from the libtorch model in float32 on the CPU:
//! the first `--golden-frames` frames of the first validation chunk (or the
//! first training chunk) with their samples, teacher-forced.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use dv_text::Phoneme;
use dv_torch::tch;
use dv_train::checkpoint::decode;
use dv_train::{Chunks, DataConfig, Dataset, DurationModel, Model, ProsodyExample, RunConfig, Wavenet};
use dv_voice::{ConditioningConfig, DurationGolden, F0Config, Golden, Lineage, Voice, VoiceConfig, Weights};

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A WaveNet checkpoint written by `dv train`.
    #[arg(long, required_unless_present = "voice", conflicts_with = "voice")]
    checkpoint: Option<PathBuf>,
    /// An existing voice package to add `--duration` and/or `--g2p` to (instead of `--checkpoint`).
    #[arg(long)]
    voice: Option<PathBuf>,
    /// A grapheme-to-phoneme checkpoint (§3.1) to include, for words missing from the lexicon.
    #[arg(long)]
    g2p: Option<PathBuf>,
    /// Write `--checkpoint`'s model weights alone (no optimizer state; any model kind) to this
    /// file and stop: a checkpoint small enough to ship, still readable by `dv export` and `dv evaluate`.
    #[arg(long, requires = "checkpoint")]
    model_only: Option<PathBuf>,
    /// With `--model-only`: more checkpoints of the same model, whose weights are averaged
    /// element-wise with `--checkpoint`'s (checkpoint averaging, as ESPnet and fairseq do).
    #[arg(long, num_args = 1.., requires = "model_only")]
    average: Vec<PathBuf>,
    /// Store the weights in half precision (IEEE binary16), half the bytes. With
    /// `--model-only`: `dv export`, `dv evaluate` and `dv train` read them back as float32.
    /// With `--checkpoint … --out VOICE`: every WaveNet and duration/F0 weight is rounded to
    /// binary16 before the golden outputs are computed, so the package (FORMAT.md) stores
    /// exactly the weights its goldens were made with.
    #[arg(long)]
    half: bool,
    /// Words decoded into the package's G2P golden outputs (from the run's test split).
    #[arg(long, default_value_t = 20)]
    golden_words: usize,
    /// The featurize output the run trained on (default: the run config's `[data] url`).
    #[arg(long)]
    features: Option<String>,
    /// The voice package directory to write.
    #[arg(long, required_unless_present = "model_only")]
    out: Option<PathBuf>,
    /// A duration/F0 model checkpoint (§3.3) to include, so that the voice speaks text.
    #[arg(long)]
    duration: Option<PathBuf>,
    /// Conditioning frames in the golden example (64 samples each).
    #[arg(long, default_value_t = 8)]
    golden_frames: usize,
}

/// Rounds every parameter to the nearest binary16 value in place (`--half`).
fn round_to_half(params: Vec<(String, tch::Tensor)>) -> anyhow::Result<()> {
    tch::no_grad(|| -> anyhow::Result<()> {
        for (name, mut t) in params {
            let rounded = t.f_to_kind(tch::Kind::Half)?.f_to_kind(t.kind())?;
            if !bool::try_from(rounded.f_isfinite()?.f_all()?)? {
                bail!("{name}: a weight is beyond the half-precision range; export without --half");
            }
            t.f_copy_(&rounded)?;
        }
        Ok(())
    })
}

fn to_voice_tensor(name: &str, t: &tch::Tensor) -> anyhow::Result<dv_voice::Tensor> {
    let shape: Vec<usize> = t.size().iter().map(|&d| d as usize).collect();
    let data = Vec::<f32>::try_from(t.f_to_kind(tch::Kind::Float)?.f_contiguous()?.f_view([-1])?)?;
    Ok(dv_voice::Tensor::new(name, shape, data)?)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The package's `duration` section for a trained duration/F0 model.
fn duration_section(d: &DurationModel, stress: bool) -> dv_voice::DurationConfig {
    dv_voice::DurationConfig { stress, ..d.config.duration }
}

/// The duration model's golden outputs for one utterance (eval mode, CPU).
fn duration_golden_of(
    d: &DurationModel,
    config: &VoiceConfig,
    example: &ProsodyExample,
) -> anyhow::Result<DurationGolden> {
    let data = dv_train::Prosody { examples: vec![example.clone()], f0_points: d.config.duration.f0_points };
    let b = data.batch(&[0], tch::Device::Cpu)?;
    let out = tch::no_grad(|| d.forward(&b.inputs, false, 0, &[0]))?.f_squeeze_dim(0)?;
    Ok(DurationGolden::new(config, &example.phonemes, to_voice_tensor("golden.duration.output", &out)?)?)
}

/// Writes the voice package of `model` and returns its config.
pub(crate) fn export(
    model: &Wavenet,
    chunks: &Chunks,
    golden_chunk: usize,
    golden_frames: usize,
    lineage: Lineage,
    duration: Option<(&DurationModel, &ProsodyExample)>,
    out: &Path,
) -> anyhow::Result<VoiceConfig> {
    let c = &model.config;
    let conditioning = ConditioningConfig {
        // Whether the training labels carried stress (the embedded corpus's
        // do not: every frame was built with stress "none", so must a
        // front end's).
        stress: chunks.utterances().iter().any(|u| u.phones.iter().any(|p| p.phoneme.stress.index() != 0)),
        ..c.conditioning
    };
    let phonemes = Phoneme::ALL.iter().map(|p| p.symbol().to_string()).collect();
    let f0 = F0Config { min_hz: chunks.norm.min_hz as f64, max_hz: chunks.norm.max_hz as f64 };
    let mut config = VoiceConfig::new(c.wavenet, conditioning, phonemes, dv_text::Stress::COUNT, f0, lineage);
    if let Some((d, _)) = duration {
        config.duration = Some(duration_section(d, config.conditioning.stress));
    }
    if config.hop() != c.hop {
        bail!("the model's hop {} is not the package's {} (16384 Hz / 256 Hz)", c.hop, config.hop());
    }
    let mut weights = Weights::new();
    for (name, t) in model.named_parameters() {
        weights.insert(name.clone(), to_voice_tensor(&name, &t)?);
    }
    let mut duration_golden = None;
    if let Some((d, example)) = duration {
        for (name, t) in d.named_parameters() {
            weights.insert(name.clone(), to_voice_tensor(&name, &t)?);
        }
        duration_golden = Some(duration_golden_of(d, &config, example)?);
    }
    // Golden: a fixed example through the float32 model.
    let (cond, codes) = chunks.example(golden_chunk)?;
    let dim = c.conditioning.input_dim;
    let frames = golden_frames.min(cond.len() / dim).max(1);
    let n = frames * c.hop;
    let x = tch::Tensor::from_slice(&cond[..frames * dim]).f_view([1, frames as i64, dim as i64])?;
    let y = tch::Tensor::from_slice(&codes[..n]).f_view([1, n as i64])?;
    let (l, logits) = tch::no_grad(|| -> anyhow::Result<(tch::Tensor, tch::Tensor)> {
        Ok((model.conditioning(&x)?, model.logits(&x, &y)?))
    })?;
    let golden = Golden {
        features: to_voice_tensor("golden.features", &x.f_squeeze_dim(0)?)?,
        conditioning: to_voice_tensor("golden.conditioning", &l.f_squeeze_dim(0)?)?,
        samples: codes[..n].iter().map(|&v| v as u8).collect(),
        logits: to_voice_tensor("golden.logits", &logits.f_squeeze_dim(0)?)?,
        duration: duration_golden,
        g2p: None,
    };
    let voice = Voice::new(config.clone(), weights)?.with_golden(golden)?;
    voice.save(out)?;
    Ok(config)
}

/// The duration/F0 model a checkpoint holds, and its step.
pub(crate) fn load_duration(path: &Path) -> anyhow::Result<(DurationModel, u64)> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).with_context(|| format!("reading {name}"))?;
    let ck = decode(&name, &bytes)?;
    let cfg = RunConfig::from_toml(&format!("{name} (its run config)"), &ck.state.config)?;
    let sizes = cfg.duration_sizes(&name).with_context(|| format!("{name} is not a duration/F0 checkpoint"))?;
    let model = DurationModel::new(&sizes, tch::Device::Cpu)?;
    dv_train::checkpoint::load_model_weights(&name, &ck, &model)?;
    Ok((model, ck.state.step))
}

/// Adds a duration/F0 model to an existing voice package.
fn add_duration(voice: &Path, duration: &Path, features: Option<&String>, out: &Path) -> anyhow::Result<()> {
    let v = Voice::read(voice).with_context(|| format!("reading {}", voice.display()))?;
    let (d, step) = load_duration(duration)?;
    let name = duration.display().to_string();
    let cfg = RunConfig::from_toml(&name, &decode(&name, &std::fs::read(duration)?)?.state.config)?;
    let DataConfig::Prosody(mut data) = cfg.data.clone() else { bail!("{name}: not a duration/F0 run") };
    if let Some(f) = features {
        data.url = f.clone();
    }
    let split = dv_train::Prosody::load(&data, d.config.duration.f0_points)?;
    let set = if split.validation.examples.is_empty() { &split.train } else { &split.validation };
    let example = set.examples.first().with_context(|| format!("{}: no utterances", data.url))?;
    let stress =
        split.train.examples.iter().chain(&split.validation.examples).any(|e| e.phonemes.iter().any(|p| p.1 != 0));
    let mut config = v.config().clone();
    // A package written before `conditioning.stress` existed reads as
    // stress-bearing; when the WaveNet was trained on the same featurize
    // output (same manifest hash or path), that output says whether its
    // frames carried stress.
    let wavenet_features = config.lineage.featurizer.get("features").and_then(|f| f.as_str()).unwrap_or("");
    let same = |a: &str, b: &str| {
        let canon = |p: &str| std::fs::canonicalize(p.strip_prefix("file://").unwrap_or(p)).ok();
        a == b || (canon(a).is_some() && canon(a) == canon(b))
    };
    let manifest =
        std::fs::read(Path::new(data.url.strip_prefix("file://").unwrap_or(&data.url)).join("manifest.json"));
    let same_manifest = manifest.is_ok_and(|m| {
        !config.lineage.corpus_manifest_sha256.is_empty() && sha256_hex(&m) == config.lineage.corpus_manifest_sha256
    });
    if same_manifest || same(wavenet_features, &data.url) {
        config.conditioning.stress = stress;
    }
    let dc = &d.config.duration;
    config.duration = Some(duration_section(&d, stress));
    let mut weights = v.weights().clone();
    weights.retain(|k, _| !k.starts_with("duration."));
    for (n, t) in d.named_parameters() {
        weights.insert(n.clone(), to_voice_tensor(&n, &t)?);
    }
    let dg = duration_golden_of(&d, &config, example)?;
    let mut voice_out = Voice::new(config, weights)?;
    if let Some(g) = v.golden() {
        let mut g = g.clone();
        g.duration = Some(dg);
        voice_out = voice_out.with_golden(g)?;
    }
    voice_out.save(out)?;
    println!(
        "wrote {}: {} plus the duration/F0 model of {name} (step {step}, {} GRU layers x {}, stress {})",
        out.display(),
        voice.display(),
        dc.gru_layers,
        dc.gru,
        if stress { "used" } else { "absent from the labels: fed as none" }
    );
    Ok(())
}

/// A left-to-right G2P checkpoint of `dv train` in the voice format: its
/// config for `phonemes` phonemes and `stress_levels` stress levels, its
/// `g2p.*` tensors, and the libtorch model, its sizes, data and step.
pub(crate) struct G2pCheckpoint {
    pub config: dv_voice::G2pConfig,
    pub weights: Weights,
    model: dv_train::G2p,
    sizes: dv_train::G2pConfig,
    lexicon: dv_train::LexiconConfig,
    step: u64,
}

/// Reads the G2P checkpoint `path` (see [`G2pCheckpoint`]).
pub(crate) fn g2p_checkpoint(path: &Path, phonemes: usize, stress_levels: usize) -> anyhow::Result<G2pCheckpoint> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).with_context(|| format!("reading {name}"))?;
    let ck = decode(&name, &bytes)?;
    let cfg = RunConfig::from_toml(&format!("{name} (its run config)"), &ck.state.config)?;
    let sizes = cfg.g2p_sizes(&name).with_context(|| format!("{name} is not a G2P checkpoint"))?;
    let DataConfig::Lexicon(lexicon) = cfg.data.clone() else { bail!("{name}: not a G2P run") };
    if lexicon.reverse {
        bail!("{name}: a right-to-left G2P ([data] reverse = true) only rescores (dv evaluate --rescore-with); export a left-to-right one");
    }
    let model = dv_train::G2p::new(&sizes, tch::Device::Cpu)?;
    dv_train::checkpoint::load_model_weights(&name, &ck, &model)?;
    let g = &sizes.g2p;
    let config = dv_voice::G2pConfig {
        beam: g.beam,
        attention: g.attention,
        ..dv_voice::G2pConfig::new(g.embed, g.hidden, g.layers, phonemes, stress_levels)
    };
    let mut weights = Weights::new();
    for (n, t) in model.named_parameters() {
        weights.insert(n.clone(), to_voice_tensor(&n, &t)?);
    }
    Ok(G2pCheckpoint { config, weights, model, sizes, lexicon, step: ck.state.step })
}

/// The G2P checkpoint `path` as the inference side runs it (`dv_synth::G2p`,
/// as in a voice package), over `dv_text`'s phonemes and stress levels: what
/// `dv g2p` and `dv synth` use for words missing from the lexicon.
pub(crate) fn load_g2p(path: &Path) -> anyhow::Result<dv_synth::G2p> {
    let g = g2p_checkpoint(path, Phoneme::COUNT, dv_text::Stress::COUNT)?;
    dv_synth::G2p::from_weights(g.config, dv_text::Stress::COUNT, &g.weights)
        .with_context(|| format!("{}: the G2P model in the voice format", path.display()))
}

/// Adds a G2P model to the voice package in `voice`, written to `out`.
fn add_g2p(voice: &Path, g2p: &Path, golden_words: usize, out: &Path) -> anyhow::Result<()> {
    let v = Voice::read(voice).with_context(|| format!("reading {}", voice.display()))?;
    let name = g2p.display().to_string();
    let mut config = v.config().clone();
    let G2pCheckpoint { config: gc, weights: g2p_weights, model, sizes, lexicon, step } =
        g2p_checkpoint(g2p, config.phonemes.len(), config.stress_levels)?;
    config.g2p = Some(gc);
    let mut weights = v.weights().clone();
    weights.retain(|k, _| !k.starts_with("g2p."));
    weights.extend(g2p_weights);
    let split = dv_train::Pronunciations::load(&lexicon)?;
    let mut words = Vec::new();
    for i in 0..split.test.len().min(golden_words) {
        let (toks, _) = model.beam(&split.test.letters[i], sizes.g2p.beam)?;
        words.push(dv_voice::G2pWord {
            letters: split.test.letters[i].iter().map(|&l| l as usize).collect(),
            tokens: toks.iter().map(|&t| t as usize).collect(),
        });
    }
    let mut out_voice = Voice::new(config, weights)?;
    match v.golden() {
        Some(g) => {
            let mut g = g.clone();
            g.g2p = if words.is_empty() { None } else { Some(dv_voice::G2pGolden::new(out_voice.config(), &words)?) };
            out_voice = out_voice.with_golden(g)?;
        }
        None => words.clear(), // golden words live beside the WaveNet's golden outputs
    }
    out_voice.save(out)?;
    println!(
        "wrote {}: {} plus the G2P model of {name} (step {}, {}+{} GRU layers x {}{}, beam {}, {} golden words)",
        out.display(),
        voice.display(),
        step,
        sizes.g2p.layers,
        sizes.g2p.layers,
        sizes.g2p.hidden,
        if sizes.g2p.attention { " with attention" } else { "" },
        sizes.g2p.beam,
        words.len()
    );
    Ok(())
}

pub(crate) fn run(a: ExportArgs) -> anyhow::Result<()> {
    if let (Some(c), Some(out)) = (&a.checkpoint, &a.model_only) {
        let mut cks = Vec::with_capacity(1 + a.average.len());
        for path in std::iter::once(c).chain(&a.average) {
            let name = path.display().to_string();
            let ck = decode(&name, &std::fs::read(path).with_context(|| format!("reading {name}"))?)?;
            cks.push((name, ck));
        }
        let steps: Vec<String> = cks.iter().map(|(_, ck)| ck.state.step.to_string()).collect();
        let (state, tensors) = dv_train::checkpoint::average(&cks)?;
        let bytes = if a.half {
            dv_train::checkpoint::encode_half(&state, &tensors)?
        } else {
            dv_train::checkpoint::encode(&state, &tensors)?
        };
        crate::write_atomic(out, &bytes)?;
        let what = if cks.len() == 1 {
            format!("{} (step {})", cks[0].0, state.step)
        } else {
            format!("the mean of {} checkpoints (steps {})", cks.len(), steps.join(", "))
        };
        println!(
            "wrote {}: {} model tensors of {what}{}, {:.1} MB",
            out.display(),
            tensors.len(),
            if a.half { " in half precision" } else { "" },
            bytes.len() as f64 / 1e6
        );
        return Ok(());
    }
    let Some(out) = a.out.clone() else { bail!("give --out") };
    if let Some(v) = &a.voice {
        if a.duration.is_none() && a.g2p.is_none() {
            bail!("--voice needs --duration and/or --g2p to add");
        }
        if a.half {
            bail!("--half rounds a checkpoint's weights before its goldens are made: give it with --checkpoint, not --voice");
        }
        let mut from = v.clone();
        if let Some(d) = &a.duration {
            add_duration(&from, d, a.features.as_ref(), &out)?;
            from = out.clone();
        }
        if let Some(g) = &a.g2p {
            add_g2p(&from, g, a.golden_words, &out)?;
        }
        return Ok(());
    }
    let Some(checkpoint) = a.checkpoint.clone() else { bail!("give --checkpoint (or --voice with --duration)") };
    let name = checkpoint.display().to_string();
    let bytes = std::fs::read(&checkpoint).with_context(|| format!("reading {name}"))?;
    let ck = decode(&name, &bytes)?;
    let cfg = RunConfig::from_toml(&format!("{name} (its run config)"), &ck.state.config)?;
    let mut sizes = cfg.wavenet_sizes(&name).with_context(|| format!("{name} is not a WaveNet checkpoint"))?;
    sizes.bf16 = false;
    let model = Wavenet::new(&sizes, tch::Device::Cpu)?;
    dv_train::checkpoint::load_model_weights(&name, &ck, &model)?;
    if a.half {
        round_to_half(model.named_parameters())?;
    }
    let DataConfig::Chunks(mut data) = cfg.data.clone() else {
        bail!("{name}: the run did not train on [data] kind = \"chunks\"");
    };
    if let Some(f) = &a.features {
        data.url = f.clone();
    }
    let split = Chunks::load(&data, sizes.hop)
        .with_context(|| format!("reading the features {} (pass --features if they moved)", data.url))?;
    let (chunks, index) = if !split.validation.is_empty() { (&split.validation, 0) } else { (&split.train, 0) };
    if chunks.is_empty() {
        bail!("{}: no usable chunks for the golden example", data.url);
    }
    let dir = data.url.strip_prefix("file://").unwrap_or(&data.url).to_string();
    let manifest_path = Path::new(&dir).join("manifest.json");
    let manifest = std::fs::read(&manifest_path).unwrap_or_default();
    let featurizer = serde_json::json!({
        "features": dir,
        "manifest": serde_json::from_slice::<serde_json::Value>(&manifest).unwrap_or(serde_json::Value::Null),
        "sample_rate": sizes.hop * 256,
        "f0_normalization": { "min_hz": chunks.norm.min_hz, "max_hz": chunks.norm.max_hz, "from": if data.f0_min_hz.is_some() { "config" } else { "observed" } },
    });
    let lineage = Lineage {
        corpus_manifest_sha256: if manifest.is_empty() { String::new() } else { sha256_hex(&manifest) },
        featurizer,
        checkpoint: format!("{name} (sha256 {})", sha256_hex(&bytes)),
        step: ck.state.step,
        code_version: ck.state.code_version.clone(),
        created: crate::utc_now(),
    };
    let dur = match &a.duration {
        Some(p) => Some(load_duration(p)?),
        None => None,
    };
    if let (Some((d, _)), true) = (&dur, a.half) {
        round_to_half(d.named_parameters())?;
    }
    let example = match &dur {
        Some((d, _)) => {
            let u = chunks.utterance(index).context("no utterance for the duration golden example")?;
            Some(dv_train::prosody::prosody_example(u, d.config.duration.f0_points))
        }
        None => None,
    };
    let duration = dur.as_ref().zip(example.as_ref()).map(|((d, _), e)| (d, e));
    let config = export(&model, chunks, index, a.golden_frames, lineage, duration, &out)?;
    if let Some((_, step)) = &dur {
        println!(
            "included the duration/F0 model of {} (step {step})",
            a.duration.as_ref().map_or(String::new(), |p| p.display().to_string())
        );
    }
    if let Some(g) = &a.g2p {
        add_g2p(&out, g, a.golden_words, &out)?;
    }
    println!(
        "wrote {}: WaveNet {}x{}x{}, conditioning {} QRNN layers x {}, step {}, F0 {:.1}-{:.1} Hz, golden {} samples",
        out.display(),
        config.wavenet.layers,
        config.wavenet.residual_channels,
        config.wavenet.skip_channels,
        config.conditioning.qrnn_layers,
        config.conditioning.hidden,
        ck.state.step,
        config.f0.min_hz,
        config.f0.max_hz,
        a.golden_frames * sizes.hop
    );
    Ok(())
}
