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
use dv_train::checkpoint::decode;
use dv_train::{Chunks, DataConfig, Dataset, Model, RunConfig, Wavenet};
use dv_voice::{ConditioningConfig, F0Config, Golden, Lineage, Voice, VoiceConfig, Weights};

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A WaveNet checkpoint written by `dv train`.
    #[arg(long)]
    checkpoint: PathBuf,
    /// The featurize output the run trained on (default: the run config's `[data] url`).
    #[arg(long)]
    features: Option<String>,
    /// The voice package directory to write.
    #[arg(long)]
    out: PathBuf,
    /// Conditioning frames in the golden example (64 samples each).
    #[arg(long, default_value_t = 8)]
    golden_frames: usize,
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

/// Writes the voice package of `model` and returns its config.
pub(crate) fn export(
    model: &Wavenet,
    chunks: &Chunks,
    golden_chunk: usize,
    golden_frames: usize,
    lineage: Lineage,
    out: &Path,
) -> anyhow::Result<VoiceConfig> {
    let c = &model.config;
    let wavenet = dv_voice::WavenetConfig {
        layers: c.layers as usize,
        residual_channels: c.residual_channels as usize,
        skip_channels: c.skip_channels as usize,
        dilation_cycle: c.dilation_cycle as usize,
    };
    let conditioning = ConditioningConfig {
        input_dim: c.conditioning_input as usize,
        qrnn_layers: c.qrnn_layers as usize,
        hidden: c.conditioning_hidden as usize,
    };
    let phonemes = Phoneme::ALL.iter().map(|p| p.symbol().to_string()).collect();
    let f0 = F0Config { min_hz: chunks.norm.min_hz as f64, max_hz: chunks.norm.max_hz as f64 };
    let config = VoiceConfig::new(wavenet, conditioning, phonemes, dv_text::Stress::COUNT, f0, lineage);
    if config.hop() as i64 != c.hop {
        bail!("the model's hop {} is not the package's {} (16384 Hz / 256 Hz)", c.hop, config.hop());
    }
    let mut weights = Weights::new();
    for (name, t) in model.named_parameters() {
        weights.insert(name.clone(), to_voice_tensor(&name, &t)?);
    }
    // Golden: a fixed example through the float32 model.
    let (cond, codes) = chunks.example(golden_chunk)?;
    let dim = c.conditioning_input as usize;
    let frames = golden_frames.min(cond.len() / dim).max(1);
    let n = frames * c.hop as usize;
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
    };
    let voice = Voice::new(config.clone(), weights)?.with_golden(golden)?;
    voice.save(out)?;
    Ok(config)
}

pub(crate) fn run(a: ExportArgs) -> anyhow::Result<()> {
    let name = a.checkpoint.display().to_string();
    let bytes = std::fs::read(&a.checkpoint).with_context(|| format!("reading {name}"))?;
    let ck = decode(&name, &bytes)?;
    let cfg = RunConfig::from_toml(&format!("{name} (its run config)"), &ck.state.config)?;
    let mut sizes = cfg.wavenet_sizes(&name).with_context(|| format!("{name} is not a WaveNet checkpoint"))?;
    sizes.bf16 = false;
    let model = Wavenet::new(&sizes, tch::Device::Cpu)?;
    tch::no_grad(|| -> anyhow::Result<()> {
        for (n, mut p) in model.named_parameters() {
            let t = ck.tensors.get(&format!("model.{n}")).with_context(|| format!("{name}: no tensor model.{n}"))?;
            p.f_copy_(t).with_context(|| format!("{name}: model.{n}"))?;
        }
        Ok(())
    })?;
    let DataConfig::Chunks(mut data) = cfg.data.clone() else {
        bail!("{name}: the run did not train on [data] kind = \"chunks\"");
    };
    if let Some(f) = &a.features {
        data.url = f.clone();
    }
    let split = Chunks::load(&data, sizes.hop as usize)
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
    let config = export(&model, chunks, index, a.golden_frames, lineage, &a.out)?;
    println!(
        "wrote {}: WaveNet {}x{}x{}, conditioning {} QRNN layers x {}, step {}, F0 {:.1}-{:.1} Hz, golden {} samples",
        a.out.display(),
        config.wavenet.layers,
        config.wavenet.residual_channels,
        config.wavenet.skip_channels,
        config.conditioning.qrnn_layers,
        config.conditioning.hidden,
        ck.state.step,
        config.f0.min_hz,
        config.f0.max_hz,
        a.golden_frames * sizes.hop as usize
    );
    Ok(())
}
