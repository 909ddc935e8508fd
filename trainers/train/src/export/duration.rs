//! The duration/F0 model (§3.3) in a voice package: its checkpoint, its
//! `duration` section and golden outputs, and adding it to a package.

use std::fmt;
use std::path::{Path, PathBuf};

use dv_torch::tch;
use dv_voice::{DurationGolden, Voice, VoiceConfig};

use super::weights::{sha256_hex, to_voice_tensor, voice_weights};
use crate::checkpoint::{load_model_weights, open, Opened};
use crate::data::features::local_dir;
use crate::{DataConfig, Dataset, DurationModel, Model, Prosody, ProsodyExample, RunConfig, TrainError};

/// The duration/F0 model a checkpoint holds, its step and its run config.
fn duration_checkpoint(path: &Path) -> Result<(DurationModel, u64, RunConfig), TrainError> {
    let Opened { name, data: ck, config: cfg } = open(path)?;
    let sizes = cfg.duration_sizes(&name).map_err(|source| TrainError::NotModel {
        name: name.clone(),
        model: "duration/F0",
        source,
    })?;
    let model = DurationModel::new(&sizes, tch::Device::Cpu)?;
    load_model_weights(&name, &ck, &model)?;
    Ok((model, ck.state.step, cfg))
}

/// The duration/F0 model a checkpoint holds (on the CPU), and its step.
pub fn load_duration(path: &Path) -> Result<(DurationModel, u64), TrainError> {
    duration_checkpoint(path).map(|(model, step, _)| (model, step))
}

/// The package's `duration` section for a trained duration/F0 model whose
/// inputs did (`stress`) or did not carry stress.
pub(super) fn duration_section(d: &DurationModel, stress: bool) -> dv_voice::DurationConfig {
    dv_voice::DurationConfig { stress, ..d.config.duration }
}

/// The duration model's golden outputs for one utterance (eval mode, CPU).
pub(super) fn duration_golden(
    d: &DurationModel,
    config: &VoiceConfig,
    example: &ProsodyExample,
) -> Result<DurationGolden, TrainError> {
    let data = Prosody { examples: vec![example.clone()], f0_points: d.config.duration.f0_points };
    let b = data.batch(&[0], tch::Device::Cpu)?;
    let out = tch::no_grad(|| d.forward(&b.inputs, &b.input_lengths, false, 0, &[0]))?.f_squeeze_dim(0)?;
    Ok(DurationGolden::new(config, &example.phonemes, to_voice_tensor("golden.duration.output", &out)?)?)
}

/// What [`add_duration`] wrote.
#[derive(Debug, Clone)]
pub struct DurationAdded {
    pub out: PathBuf,
    /// The package it started from.
    pub voice: PathBuf,
    /// The duration/F0 checkpoint, by name, and its step.
    pub checkpoint: String,
    pub step: u64,
    /// The model's `duration` section as written.
    pub config: dv_voice::DurationConfig,
}

impl fmt::Display for DurationAdded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        write!(
            f,
            "wrote {}: {} plus the duration/F0 model of {} (step {}, {} GRU layers x {}, stress {})",
            self.out.display(),
            self.voice.display(),
            self.checkpoint,
            self.step,
            c.gru_layers,
            c.gru,
            if c.stress { "used" } else { "absent from the labels: fed as none" }
        )
    }
}

/// Adds the duration/F0 model of the checkpoint `duration` to the voice
/// package `voice` and writes the result to `out` (which may be `voice`),
/// replacing any duration model it had. Its golden outputs join the
/// package's when it has some. The run's prosody data is read again, from
/// `features` when given (it moved), for a golden utterance and to learn
/// whether its labels carry stress.
pub fn add_duration(
    voice: &Path,
    duration: &Path,
    features: Option<&str>,
    out: &Path,
) -> Result<DurationAdded, TrainError> {
    let v = Voice::read(voice).map_err(|source| TrainError::ReadVoice { path: voice.display().to_string(), source })?;
    let (d, step, cfg) = duration_checkpoint(duration)?;
    let name = duration.display().to_string();
    let DataConfig::Prosody(mut data) = cfg.data.clone() else {
        return Err(TrainError::Export { name, reason: "not a duration/F0 run".into() });
    };
    if let Some(f) = features {
        data.url = f.to_string();
    }
    let split = Prosody::load(&data, d.config.duration.f0_points)?;
    let set = if split.validation.examples.is_empty() { &split.train } else { &split.validation };
    let example = set
        .examples
        .first()
        .ok_or_else(|| TrainError::Export { name: data.url.clone(), reason: "no utterances".into() })?;
    let stress =
        split.train.examples.iter().chain(&split.validation.examples).any(|e| e.phonemes.iter().any(|p| p.1 != 0));
    let mut config = v.config().clone();
    // A package written before `conditioning.stress` existed reads as
    // stress-bearing; when the WaveNet was trained on the same featurize
    // output (same manifest hash or path), that output says whether its
    // frames carried stress.
    let wavenet_features = config.lineage.featurizer.get("features").and_then(|f| f.as_str()).unwrap_or("");
    let same = |a: &str, b: &str| {
        let canon = |p: &str| local_dir(p).ok().and_then(|d| std::fs::canonicalize(d).ok());
        a == b || (canon(a).is_some() && canon(a) == canon(b))
    };
    let manifest = local_dir(&data.url).ok().and_then(|d| std::fs::read(d.join(dv_featurize::format::MANIFEST)).ok());
    let same_manifest = manifest.is_some_and(|m| {
        !config.lineage.corpus_manifest_sha256.is_empty() && sha256_hex(&m) == config.lineage.corpus_manifest_sha256
    });
    // Only ever towards false: a WaveNet trained on stressed phones with
    // `[data] stress = false` says so itself.
    if same_manifest || same(wavenet_features, &data.url) {
        config.conditioning.stress &= stress;
    }
    let section = duration_section(&d, stress);
    config.duration = Some(section);
    let mut weights = v.weights().clone();
    weights.retain(|k, _| !k.starts_with("duration."));
    weights.extend(voice_weights(d.named_parameters())?);
    let golden = duration_golden(&d, &config, example)?;
    let mut voice_out = Voice::new(config, weights)?;
    if let Some(g) = v.golden() {
        let mut g = g.clone();
        g.duration = Some(golden);
        voice_out = voice_out.with_golden(g)?;
    }
    voice_out.save(out)?;
    Ok(DurationAdded { out: out.to_path_buf(), voice: voice.to_path_buf(), checkpoint: name, step, config: section })
}
