//! The run configuration, one TOML file:
//!
//! ```toml
//! [model]
//! kind = "segmentation"        # the model family
//! preset = "tiny"              # or "paper" (Deep Voice §3.2 sizes)
//!
//! [data]
//! kind = "synthetic"
//! examples = 256
//! features = 20
//! classes = 16
//! seed = 1
//! validation_examples = 32     # held out, generated with seed + 1
//!
//!
//! # or a real corpus: a local `dv featurize --out` directory whose shards
//! # carry reference phones; the model must then have 1601 classes.
//! # [data]
//! # kind = "features"
//! # url = "/path/to/features/cmu_us_slt_fortunes_300"  # or file://...
//! # validation_fraction = 0.05   # held out by a hash of the id and seed
//! # seed = 0
//! # max_frames = 3000            # optional: skip longer utterances
//!
//! [optimizer]                  # Adam; β1, β2, ε default to the paper's
//! lr = 1e-3
//! clip_norm = 5.0              # optional
//!
//! [schedule]                   # lr × rate every `every` iterations
//! rate = 0.95
//! every = 500
//!
//! [train]
//! steps = 100
//! batch = 16                   # global batch, split equally among ranks
//! seed = 0
//! log_every = 10
//! validate_every = 50          # 0: never
//! device = "cpu"               # or "cuda"
//! threads_per_rank = 1         # optional; default cores / ranks
//!
//! [checkpoint]
//! url = "runs/demo/checkpoints"  # directory or object-store URL
//! every = 50
//! keep_last = 3
//!
//! [init]                      # optional: start from trained weights (fine-tuning,
//! from = "inference/voices/slt"  # continued training): a voice package directory, a
//!                              # .safetensors file (a voice's model.safetensors, a dv
//!                              # checkpoint, `dv export --model-only`), or an object-store URL
//!
//! [tracking]
//! jsonl = "runs/demo/metrics.jsonl"
//! mlflow = "http://127.0.0.1:5000"  # optional; else $MLFLOW_TRACKING_URI; else JSONL only
//! experiment = "deepvoice"
//! run_name = "demo"
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::data::{
    ChunksConfig, FeaturesConfig, LexiconConfig, ProsodyConfig, SyntheticConfig, FEATURE_MFCC, PAIR_CLASSES,
};
use crate::duration::DurationConfig;
use crate::g2p::G2pConfig;
use crate::optim::{AdamConfig, StepAnnealing};
use crate::segmentation::SegmentationConfig;
use crate::wavenet::WavenetConfig;
use crate::ConfigError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    pub model: ModelConfig,
    pub data: DataConfig,
    pub optimizer: AdamConfig,
    pub schedule: StepAnnealing,
    pub train: TrainConfig,
    pub checkpoint: CheckpointConfig,
    #[serde(default)]
    pub init: Option<InitConfig>,
    #[serde(default)]
    pub tracking: TrackingConfig,
}

/// Weights a new run starts from instead of random ones: fine-tuning on a
/// new voice, or continuing a finished run with a new schedule (ESPnet's
/// `--init_param`, Coqui's `--restore_path`). Only a run at step 0 uses
/// it: once the run has its own checkpoint, it resumes from that. Every
/// parameter of the model must be there by name with its shape (a voice
/// package holds the WaveNet's and the duration/F0 model's, so either can
/// start from it); Adam's moments, the step and the schedule start afresh,
/// so set `[optimizer] lr` to the rate to continue at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitConfig {
    /// A voice package directory (its `model.safetensors` is read), a
    /// `.safetensors` file, or either as an object-store URL.
    pub from: String,
}

/// Which model, by family and preset, with optional size overrides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum ModelConfig {
    Segmentation {
        #[serde(default)]
        preset: Option<String>,
        #[serde(default)]
        sizes: Option<SegmentationConfig>,
    },
    /// The grapheme-to-phoneme model (§3.1).
    G2p {
        #[serde(default)]
        preset: Option<String>,
        #[serde(default)]
        sizes: Option<G2pConfig>,
    },
    /// The joint duration + F0 model (§3.3, App. B).
    Duration {
        #[serde(default)]
        preset: Option<String>,
        #[serde(default)]
        sizes: Option<DurationConfig>,
    },
    /// The WaveNet with its QRNN conditioning network (App. A).
    Wavenet {
        #[serde(default)]
        preset: Option<String>,
        #[serde(default)]
        sizes: Option<WavenetConfig>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum DataConfig {
    Synthetic {
        #[serde(flatten)]
        data: SyntheticConfig,
        #[serde(default)]
        validation_examples: usize,
    },
    /// A `dv featurize` output with reference phones (`dv_train::Features`).
    Features(FeaturesConfig),
    /// A `dv featurize` output's §4.4 chunks for the WaveNet (`dv_train::Chunks`).
    Chunks(ChunksConfig),
    /// A `dv featurize` output's phone durations and F0 for the duration
    /// model (`dv_train::Prosody`).
    Prosody(ProsodyConfig),
    /// CMUDict pronunciations for the G2P model (`dv_train::Pronunciations`).
    Lexicon(LexiconConfig),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    pub steps: u64,
    /// Global batch size, split equally among the ranks.
    pub batch: usize,
    #[serde(default)]
    pub seed: u64,
    #[serde(default = "one")]
    pub log_every: u64,
    #[serde(default)]
    pub validate_every: u64,
    #[serde(default = "cpu")]
    pub device: String,
    /// Stop a collective that waits longer than this (seconds; at most
    /// [`MAX_COLLECTIVE_TIMEOUT_S`]).
    #[serde(default = "sixty")]
    pub collective_timeout_s: f64,
    /// libtorch intra-op threads per rank (default: the cores divided
    /// among the ranks). CPU results are bitwise reproducible for a fixed
    /// value.
    #[serde(default)]
    pub threads_per_rank: Option<usize>,
    /// Time each phase of a step (data, forward + backward, gradient
    /// all-reduce, optimizer) and log the mean milliseconds per step. The
    /// device is synchronised at each phase boundary, which costs a little
    /// speed; off by default.
    #[serde(default)]
    pub profile: bool,
    /// Length bucketing: sort windows of this many global batches by
    /// example length before cutting them into batches (0 = off). Less
    /// padding per batch; see `dv_train::Sampler`.
    #[serde(default)]
    pub bucket_batches: usize,
    /// Batches built ahead on a data thread while the step runs, so the
    /// GPU does not wait for the CPU to assemble the next one (0: built in
    /// the training thread, as PyTorch's `num_workers = 0`). Default: 2 on
    /// a GPU, 0 on the CPU (there the thread only takes a core from
    /// libtorch's: 60 steps of the tiny WaveNet on the 2-core dev VM took
    /// 19.7–19.9 s with it against 18.5–19.0 s without). The batches and
    /// the results are the same either way.
    #[serde(default)]
    pub prefetch: Option<usize>,
}

/// The longest `[train] collective_timeout_s` (about 31 years): any longer is
/// no timeout, and `dv train --gpus` adds its grace to it.
pub const MAX_COLLECTIVE_TIMEOUT_S: f64 = 1e9;

impl TrainConfig {
    /// `collective_timeout_s` as a [`Duration`]: how long a collective waits
    /// for the other ranks (validated: in (0, [`MAX_COLLECTIVE_TIMEOUT_S`])).
    pub fn collective_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.collective_timeout_s)
    }
}

fn one() -> u64 {
    1
}
fn cpu() -> String {
    "cpu".into()
}
fn sixty() -> f64 {
    60.0
}
fn three() -> usize {
    3
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointConfig {
    pub url: String,
    pub every: u64,
    #[serde(default = "three")]
    pub keep_last: usize,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrackingConfig {
    #[serde(default)]
    pub jsonl: Option<String>,
    #[serde(default)]
    pub mlflow: Option<String>,
    #[serde(default)]
    pub experiment: Option<String>,
    #[serde(default)]
    pub run_name: Option<String>,
}

impl RunConfig {
    /// Parses and validates a TOML config; `path` names it in errors.
    pub fn from_toml(path: &str, text: &str) -> Result<RunConfig, ConfigError> {
        let c: RunConfig =
            toml::from_str(text).map_err(|e| ConfigError { path: path.into(), reason: e.to_string() })?;
        c.validate(path)?;
        Ok(c)
    }

    pub fn load(path: &str) -> Result<RunConfig, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| ConfigError { path: path.into(), reason: e.to_string() })?;
        RunConfig::from_toml(path, &text)
    }

    pub fn to_toml(&self) -> Result<String, ConfigError> {
        toml::to_string(self).map_err(|e| ConfigError { path: "(serializing)".into(), reason: e.to_string() })
    }

    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let bad = |reason: String| Err(ConfigError { path: path.into(), reason });
        let t = &self.train;
        if t.batch == 0 || t.steps == 0 {
            return bad("train.batch and train.steps must be positive".into());
        }
        // The trainer logs when the step is a multiple of it.
        if t.log_every == 0 {
            return bad("train.log_every must be positive".into());
        }
        // A Duration: not negative, NaN or infinite (Duration::from_secs_f64 panics).
        if !(t.collective_timeout_s > 0.0 && t.collective_timeout_s <= MAX_COLLECTIVE_TIMEOUT_S) {
            return bad(format!(
                "train.collective_timeout_s = {} is not a number of seconds in (0, {MAX_COLLECTIVE_TIMEOUT_S:e}]",
                t.collective_timeout_s
            ));
        }
        if self.init.as_ref().is_some_and(|i| i.from.trim().is_empty()) {
            return bad("init.from is empty: name a voice package or a .safetensors file".into());
        }
        match &self.data {
            DataConfig::Chunks(c) => {
                if c.url.is_empty() {
                    return bad("data.url is empty".into());
                }
                if !(0.0..1.0).contains(&c.validation_fraction) {
                    return bad(format!("data.validation_fraction = {} is not in [0, 1)", c.validation_fraction));
                }
                if self.wavenet_sizes(path).is_err() {
                    return bad("[data] kind = \"chunks\" trains the WaveNet: set [model] kind = \"wavenet\"".into());
                }
            }
            DataConfig::Lexicon(c) => {
                if !(c.test_fraction >= 0.0 && c.dev_fraction >= 0.0 && c.test_fraction + c.dev_fraction < 1.0) {
                    return bad("data.test_fraction and data.dev_fraction must be ≥ 0 and sum below 1".into());
                }
                if self.g2p_sizes(path).is_err() {
                    return bad("[data] kind = \"lexicon\" trains the G2P model: set [model] kind = \"g2p\"".into());
                }
            }
            DataConfig::Prosody(c) => {
                if c.url.is_empty() {
                    return bad("data.url is empty".into());
                }
                if !(0.0..1.0).contains(&c.validation_fraction) {
                    return bad(format!("data.validation_fraction = {} is not in [0, 1)", c.validation_fraction));
                }
                if self.duration_sizes(path).is_err() {
                    return bad(
                        "[data] kind = \"prosody\" trains the duration model: set [model] kind = \"duration\"".into()
                    );
                }
            }
            DataConfig::Synthetic { data, .. } => {
                if matches!(self.model, ModelConfig::Wavenet { .. }) {
                    return bad("the WaveNet trains on [data] kind = \"chunks\"".into());
                }
                if matches!(self.model, ModelConfig::Duration { .. }) {
                    return bad("the duration model trains on [data] kind = \"prosody\"".into());
                }
                if matches!(self.model, ModelConfig::G2p { .. }) {
                    return bad("the G2P model trains on [data] kind = \"lexicon\"".into());
                }
                if let Err(e) = data.check() {
                    return bad(format!("{}: {}", e.path, e.reason));
                }
                if data.examples < t.batch {
                    return bad(format!("data has {} examples, fewer than one batch of {}", data.examples, t.batch));
                }
            }
            DataConfig::Features(f) => {
                if f.url.is_empty() {
                    return bad("data.url is empty".into());
                }
                if !(0.0..1.0).contains(&f.validation_fraction) {
                    return bad(format!("data.validation_fraction = {} is not in [0, 1)", f.validation_fraction));
                }
                if f.max_frames == Some(0) {
                    return bad("data.max_frames must be positive".into());
                }
                let sizes = self.segmentation_sizes(path)?;
                if sizes.classes != PAIR_CLASSES {
                    return bad(format!(
                        "model classes = {} but [data] kind = \"features\" has 1600 phoneme-pair labels plus the \
                         blank: set [model.sizes] classes = {PAIR_CLASSES}",
                        sizes.classes
                    ));
                }
                if sizes.mfcc != FEATURE_MFCC as i64 {
                    return bad(format!(
                        "model mfcc = {} but featurize writes {FEATURE_MFCC} MFCCs per frame: set [model.sizes] mfcc = \
                         {FEATURE_MFCC}",
                        sizes.mfcc
                    ));
                }
            }
        }
        if self.checkpoint.every == 0 || self.checkpoint.keep_last == 0 {
            return bad("checkpoint.every and checkpoint.keep_last must be positive".into());
        }
        if self.optimizer.lr.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)
            || self.schedule.rate.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)
            || self.schedule.every == 0
        {
            return bad("optimizer.lr, schedule.rate and schedule.every must be positive".into());
        }
        // The sizes the model's constructor would refuse, refused before anything runs.
        let sizes = match self.model {
            ModelConfig::Segmentation { .. } => self.segmentation_sizes(path)?.check(),
            ModelConfig::Wavenet { .. } => self.wavenet_sizes(path)?.check(),
            ModelConfig::Duration { .. } => self.duration_sizes(path)?.check(),
            ModelConfig::G2p { .. } => self.g2p_sizes(path)?.check(),
        };
        sizes.or_else(|e| bad(format!("{}: {}", e.path, e.reason)))
    }

    /// The model's sizes: the preset, then the explicit sizes if given.
    pub fn segmentation_sizes(&self, path: &str) -> Result<SegmentationConfig, ConfigError> {
        let ModelConfig::Segmentation { preset, sizes } = &self.model else {
            return Err(ConfigError { path: path.into(), reason: "the model is not a segmentation model".into() });
        };
        match (preset, sizes) {
            (_, Some(s)) => Ok(s.clone()),
            (Some(p), None) => SegmentationConfig::preset(p).ok_or_else(|| ConfigError {
                path: path.into(),
                reason: format!("unknown segmentation preset {p:?} (paper, tiny)"),
            }),
            (None, None) => Ok(SegmentationConfig::paper()),
        }
    }

    /// The WaveNet's sizes: the preset, then the explicit sizes if given.
    pub fn wavenet_sizes(&self, path: &str) -> Result<WavenetConfig, ConfigError> {
        let ModelConfig::Wavenet { preset, sizes } = &self.model else {
            return Err(ConfigError { path: path.into(), reason: "the model is not a WaveNet".into() });
        };
        match (preset, sizes) {
            (_, Some(s)) => Ok(s.clone()),
            (Some(p), None) => WavenetConfig::preset(p).ok_or_else(|| ConfigError {
                path: path.into(),
                reason: format!("unknown wavenet preset {p:?} ({})", WavenetConfig::preset_names()),
            }),
            (None, None) => Ok(WavenetConfig::new(dv_voice::WavenetConfig::table2(40, 64, 256))),
        }
    }

    /// The duration model's sizes: the preset, then the explicit sizes if given.
    pub fn duration_sizes(&self, path: &str) -> Result<DurationConfig, ConfigError> {
        let ModelConfig::Duration { preset, sizes } = &self.model else {
            return Err(ConfigError { path: path.into(), reason: "the model is not a duration model".into() });
        };
        match (preset, sizes) {
            (_, Some(s)) => Ok(s.clone()),
            (Some(p), None) => DurationConfig::preset(p).ok_or_else(|| ConfigError {
                path: path.into(),
                reason: format!("unknown duration preset {p:?} (paper, tiny)"),
            }),
            (None, None) => Ok(DurationConfig::paper()),
        }
    }

    /// The G2P model's sizes: the preset, then the explicit sizes if given.
    pub fn g2p_sizes(&self, path: &str) -> Result<G2pConfig, ConfigError> {
        let ModelConfig::G2p { preset, sizes } = &self.model else {
            return Err(ConfigError { path: path.into(), reason: "the model is not a G2P model".into() });
        };
        match (preset, sizes) {
            (_, Some(s)) => Ok(s.clone()),
            (Some(p), None) => G2pConfig::preset(p).ok_or_else(|| ConfigError {
                path: path.into(),
                reason: format!("unknown g2p preset {p:?} (paper, compact, tiny)"),
            }),
            (None, None) => Ok(G2pConfig::paper()),
        }
    }
}
