//! A WaveNet checkpoint (with, optionally, a duration/F0 checkpoint) → a
//! voice package with golden outputs.

use std::fmt;
use std::path::{Path, PathBuf};

use dv_text::{Phoneme, Stress};
use dv_torch::tch;
use dv_voice::{ConditioningConfig, F0Config, Golden, Lineage, Voice, VoiceConfig};

use super::duration::{duration_golden, duration_section, load_duration};
use super::weights::{round_to_half, sha256_hex, to_voice_tensor, voice_weights};
use crate::checkpoint::{load_model_weights, read_bytes, Opened};
use crate::data::features::local_dir;
use crate::{Chunks, DataConfig, Dataset, DurationModel, Model, ProsodyExample, TrainError, Wavenet};

/// Conditioning frames in a package's golden example by default (64
/// samples each).
pub const GOLDEN_FRAMES: usize = 8;

/// What [`export_wavenet`] reads and writes (`dv export --checkpoint`).
#[derive(Debug, Clone)]
pub struct WavenetExport {
    /// A WaveNet checkpoint written by `dv train`.
    pub checkpoint: PathBuf,
    /// The voice package directory to write.
    pub out: PathBuf,
    /// The featurize output the run trained on, when it is no longer at its
    /// run config's `[data] url`.
    pub features: Option<String>,
    /// A duration/F0 checkpoint (§3.3) to include, so that the voice speaks
    /// text.
    pub duration: Option<PathBuf>,
    /// Round every WaveNet and duration/F0 weight to binary16 before the
    /// golden outputs are computed, so that a package stored in half
    /// precision holds exactly the weights its goldens were made with.
    pub half: bool,
    /// Conditioning frames in the golden example (default [`GOLDEN_FRAMES`]).
    pub golden_frames: usize,
    /// When the package is written (RFC 3339, UTC), for its lineage.
    pub created: String,
}

/// What [`export_wavenet`] wrote.
#[derive(Debug, Clone)]
pub struct WavenetExported {
    pub out: PathBuf,
    /// The package's config.
    pub config: VoiceConfig,
    /// The WaveNet checkpoint's step.
    pub step: u64,
    /// The duration/F0 checkpoint included, and its step.
    pub duration: Option<(PathBuf, u64)>,
    /// Samples asked of the golden example: golden frames × hop.
    pub golden_samples: usize,
}

impl fmt::Display for WavenetExported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        write!(
            f,
            "wrote {}: WaveNet {}, conditioning {} QRNN layers x {}, step {}, F0 {:.1}-{:.1} Hz, golden {} samples",
            self.out.display(),
            c.wavenet.name(),
            c.conditioning.qrnn_layers,
            c.conditioning.hidden,
            self.step,
            c.f0.min_hz,
            c.f0.max_hz,
            self.golden_samples
        )
    }
}

/// Writes the voice package of the WaveNet checkpoint `e.checkpoint` (and of
/// the duration/F0 checkpoint `e.duration`) to `e.out` (module docs).
pub fn export_wavenet(e: &WavenetExport) -> Result<WavenetExported, TrainError> {
    let name = e.checkpoint.display().to_string();
    let bytes = read_bytes(&e.checkpoint)?;
    let Opened { data: ck, config: cfg, .. } = Opened::from_bytes(name.clone(), &bytes)?;
    let mut sizes = cfg.wavenet_sizes(&name).map_err(|source| TrainError::NotModel {
        name: name.clone(),
        model: "WaveNet",
        source,
    })?;
    sizes.bf16 = false;
    let model = Wavenet::new(&sizes, tch::Device::Cpu)?;
    load_model_weights(&name, &ck, &model)?;
    if e.half {
        round_to_half(model.named_parameters())?;
    }
    let DataConfig::Chunks(mut data) = cfg.data.clone() else {
        return Err(TrainError::Export { name, reason: "the run did not train on [data] kind = \"chunks\"".into() });
    };
    if let Some(f) = &e.features {
        data.url = f.clone();
    }
    // The golden example is a validation chunk, which is always conditioned on its own F0: the
    // training split's predicted F0 (a duration/F0 forward per utterance, minutes on a loaded CPU
    // for an hour of speech) is not needed here.
    data.f0_predicted = 0.0;
    let split = Chunks::load(&data, sizes.hop)
        .map_err(|source| TrainError::ExportFeatures { url: data.url.clone(), source: Box::new(source) })?;
    let chunks = if !split.validation.is_empty() { &split.validation } else { &split.train };
    if chunks.is_empty() {
        let reason = "no usable chunks for the golden example".into();
        return Err(TrainError::Export { name: data.url.clone(), reason });
    }
    let dir = local_dir(&data.url)?.display().to_string();
    let manifest = std::fs::read(Path::new(&dir).join(dv_featurize::format::MANIFEST)).unwrap_or_default();
    let featurizer = serde_json::json!({
        "features": dir,
        "manifest": serde_json::from_slice::<serde_json::Value>(&manifest).unwrap_or(serde_json::Value::Null),
        "sample_rate": sizes.hop * 256,
        "f0_normalization": { "min_hz": chunks.norm.min_hz, "max_hz": chunks.norm.max_hz, "from": if data.f0_min_hz.is_some() { "config" } else { "observed, 1st-99th percentile" } },
    });
    let lineage = Lineage {
        corpus_manifest_sha256: if manifest.is_empty() { String::new() } else { sha256_hex(&manifest) },
        featurizer,
        checkpoint: format!("{name} (sha256 {})", sha256_hex(&bytes)),
        step: ck.state.step,
        code_version: ck.state.code_version.clone(),
        created: e.created.clone(),
    };
    let dur = match &e.duration {
        Some(p) => Some(load_duration(p)?),
        None => None,
    };
    if let (Some((d, _)), true) = (&dur, e.half) {
        round_to_half(d.named_parameters())?;
    }
    let example = match &dur {
        Some((d, _)) => {
            let u = chunks.utterance(0).ok_or_else(|| TrainError::Export {
                name: data.url.clone(),
                reason: "no utterance for the duration golden example".into(),
            })?;
            Some(crate::prosody::prosody_example(u, d.config.duration.f0_points))
        }
        None => None,
    };
    let duration = dur.as_ref().zip(example.as_ref()).map(|((d, _), x)| (d, x));
    let config = write_package(&name, &model, chunks, e.golden_frames, lineage, duration, &e.out)?;
    Ok(WavenetExported {
        out: e.out.clone(),
        config,
        step: ck.state.step,
        duration: e.duration.clone().zip(dur.map(|(_, step)| step)),
        golden_samples: e.golden_frames * sizes.hop,
    })
}

/// Writes the voice package of `model`, from the checkpoint `name`, to `out`
/// and returns its config: the golden example is the first `golden_frames`
/// frames of the first of `chunks`; `duration`, a duration/F0 model with its
/// golden utterance.
fn write_package(
    name: &str,
    model: &Wavenet,
    chunks: &Chunks,
    golden_frames: usize,
    lineage: Lineage,
    duration: Option<(&DurationModel, &ProsodyExample)>,
    out: &Path,
) -> Result<VoiceConfig, TrainError> {
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
    let mut config = VoiceConfig::new(c.wavenet, conditioning, phonemes, Stress::COUNT, f0, lineage);
    if let Some((d, _)) = duration {
        config.duration = Some(duration_section(d, config.conditioning.stress));
    }
    if config.hop() != c.hop {
        return Err(TrainError::Export {
            name: name.to_string(),
            reason: format!("the model's hop {} is not the package's {} (16384 Hz / 256 Hz)", c.hop, config.hop()),
        });
    }
    let mut weights = voice_weights(model.named_parameters())?;
    let mut golden_duration = None;
    if let Some((d, example)) = duration {
        weights.extend(voice_weights(d.named_parameters())?);
        golden_duration = Some(duration_golden(d, &config, example)?);
    }
    // Golden: a fixed example through the float32 model.
    let (cond, codes) = chunks.example(0)?;
    let dim = c.conditioning.input_dim;
    let frames = golden_frames.min(cond.len() / dim).max(1);
    let n = frames * c.hop;
    let x = tch::Tensor::from_slice(&cond[..frames * dim]).f_view([1, frames as i64, dim as i64])?;
    let y = tch::Tensor::from_slice(&codes[..n]).f_view([1, n as i64])?;
    let (l, logits) = tch::no_grad(|| -> Result<(tch::Tensor, tch::Tensor), TrainError> {
        Ok((model.conditioning(&x)?, model.logits(&x, &y)?))
    })?;
    let golden = Golden {
        features: to_voice_tensor("golden.features", &x.f_squeeze_dim(0)?)?,
        conditioning: to_voice_tensor("golden.conditioning", &l.f_squeeze_dim(0)?)?,
        samples: codes[..n].iter().map(|&v| v as u8).collect(),
        logits: to_voice_tensor("golden.logits", &logits.f_squeeze_dim(0)?)?,
        duration: golden_duration,
        g2p: None,
    };
    let voice = Voice::new(config.clone(), weights)?.with_golden(golden)?;
    voice.save(out)?;
    Ok(config)
}
