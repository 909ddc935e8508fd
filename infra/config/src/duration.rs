//! The duration/F0 model as a run trains it (Deep Voice §3.3): the voice
//! package's architecture (`dv_voice::DurationConfig`) plus the training
//! loss's dropout and weights.

use dv_text::{Phoneme, Stress};
use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// The duration/F0 model as a run trains it. A run config's
/// `[model.sizes]` writes it as one flat table, every key with a default:
/// `fc` (256), `gru` (128), `gru_layers` (2), `f0_points` (20),
/// `bidirectional` (false), `dropout` (0.2) and `lambdas`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "DurationToml", into = "DurationToml")]
pub struct DurationConfig {
    /// The sizes and output units: the package's `duration` (§3.3, App. B).
    /// The input is the trainer's one-hot of 40 phonemes and 5 stress
    /// levels, durations are in 10 ms and F0 in 100 Hz; `stress` is the
    /// labels', which export reads from the data (a run config leaves it
    /// `true`).
    pub duration: dv_voice::DurationConfig,
    /// Drop probability after the fully connected layers and the last GRU.
    /// §3.3 writes "dropout with a probability of 0.8", read as a keep
    /// probability (as for the segmentation model): drop 0.2.
    pub dropout: f64,
    /// λ1, λ2, λ3 of eq. 27 (`dv_train::duration`'s docs).
    pub lambdas: [f64; 3],
}

/// `[model.sizes]` of a duration run as written: one flat table. A private
/// shape for the reason `WavenetToml` is one (`wavenet.rs`): the struct
/// nests `dv-voice`'s section, and `flatten` does not work with
/// `deny_unknown_fields`. Fields in the order they are written.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DurationToml {
    #[serde(default)]
    fc: Option<usize>,
    #[serde(default)]
    gru: Option<usize>,
    #[serde(default)]
    gru_layers: Option<usize>,
    #[serde(default)]
    f0_points: Option<usize>,
    /// Whether each GRU layer also reads the phonemes last to first, so that
    /// a phoneme's duration and F0 see what follows it (false: the paper's
    /// unidirectional layers). Written into a run's config only when true,
    /// so that the keys of runs from before it stay as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bidirectional: Option<bool>,
    #[serde(default)]
    dropout: Option<f64>,
    #[serde(default)]
    lambdas: Option<[f64; 3]>,
}

impl From<DurationToml> for DurationConfig {
    fn from(t: DurationToml) -> DurationConfig {
        let paper = DurationConfig::paper();
        let d = paper.duration;
        DurationConfig {
            duration: dv_voice::DurationConfig {
                fc: t.fc.unwrap_or(d.fc),
                gru: t.gru.unwrap_or(d.gru),
                gru_layers: t.gru_layers.unwrap_or(d.gru_layers),
                f0_points: t.f0_points.unwrap_or(d.f0_points),
                bidirectional: t.bidirectional.unwrap_or(d.bidirectional),
                ..d
            },
            dropout: t.dropout.unwrap_or(paper.dropout),
            lambdas: t.lambdas.unwrap_or(paper.lambdas),
        }
    }
}

impl From<DurationConfig> for DurationToml {
    fn from(c: DurationConfig) -> DurationToml {
        let d = c.duration;
        DurationToml {
            fc: Some(d.fc),
            gru: Some(d.gru),
            gru_layers: Some(d.gru_layers),
            f0_points: Some(d.f0_points),
            bidirectional: d.bidirectional.then_some(true),
            dropout: Some(c.dropout),
            lambdas: Some(c.lambdas),
        }
    }
}

impl DurationConfig {
    /// The paper's sizes ([`dv_voice::DurationConfig::paper`]), dropout 0.2
    /// and the λ of `dv_train::duration`'s docs.
    pub fn paper() -> DurationConfig {
        DurationConfig {
            duration: dv_voice::DurationConfig::paper(true),
            dropout: 0.2,
            lambdas: [1.0, 1.0 / 20.0, 0.1 / 20.0],
        }
    }

    pub fn tiny() -> DurationConfig {
        let paper = DurationConfig::paper();
        DurationConfig { duration: dv_voice::DurationConfig { fc: 16, gru: 8, ..paper.duration }, ..paper }
    }

    pub fn preset(name: &str) -> Option<DurationConfig> {
        match name {
            "paper" => Some(DurationConfig::paper()),
            "tiny" => Some(DurationConfig::tiny()),
            _ => None,
        }
    }

    /// Sizes a model can be built with (`dv_train::DurationModel::new`
    /// refuses the others with this error), over the trainer's inputs and
    /// units.
    pub fn check(&self) -> Result<(), ConfigError> {
        let (c, d, paper) = (self, &self.duration, dv_voice::DurationConfig::paper(true));
        if d.fc < 1
            || d.gru < 1
            || d.gru_layers < 1
            || d.f0_points < 2
            || !(0.0..1.0).contains(&c.dropout)
            || d.input_dim != Phoneme::COUNT + Stress::COUNT
            || d.duration_unit_s != paper.duration_unit_s
            || d.f0_unit_hz != paper.f0_unit_hz
        {
            return Err(ConfigError { path: "[model]".into(), reason: format!("bad duration sizes {c:?}") });
        }
        Ok(())
    }

    /// Target columns per phoneme in a `dv_train::Batch`: duration, voiced share,
    /// F0 points, and their voiced mask.
    pub fn target_width(&self) -> usize {
        2 + 2 * self.duration.f0_points
    }
}
