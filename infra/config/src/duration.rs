//! The duration/F0 model's sizes and loss weights (Deep Voice §3.3).

use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// Sizes and loss weights of the duration/F0 model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DurationConfig {
    /// Fully connected layers' units (§3.3: 2 × 256).
    #[serde(default = "two_five_six")]
    pub fc: i64,
    /// GRU cells per layer (§3.3: 128).
    #[serde(default = "one_two_eight")]
    pub gru: i64,
    /// Unidirectional GRU layers (§3.3: 2).
    #[serde(default = "two")]
    pub gru_layers: i64,
    /// F0 values per phoneme (§3.3: 20).
    #[serde(default = "twenty")]
    pub f0_points: i64,
    /// Drop probability after the fully connected layers and the last GRU.
    /// §3.3 writes "dropout with a probability of 0.8", read as a keep
    /// probability (as for the segmentation model): drop 0.2.
    #[serde(default = "point_two")]
    pub dropout: f64,
    /// λ1, λ2, λ3 of eq. 27 (`dv_train::duration`'s docs).
    #[serde(default = "default_lambdas")]
    pub lambdas: [f64; 3],
}

fn two_five_six() -> i64 {
    256
}
fn one_two_eight() -> i64 {
    128
}
fn two() -> i64 {
    2
}
fn twenty() -> i64 {
    20
}
fn point_two() -> f64 {
    0.2
}
fn default_lambdas() -> [f64; 3] {
    [1.0, 1.0 / 20.0, 0.1 / 20.0]
}

impl DurationConfig {
    pub fn paper() -> DurationConfig {
        DurationConfig { fc: 256, gru: 128, gru_layers: 2, f0_points: 20, dropout: 0.2, lambdas: default_lambdas() }
    }

    pub fn tiny() -> DurationConfig {
        DurationConfig { fc: 16, gru: 8, ..DurationConfig::paper() }
    }

    pub fn preset(name: &str) -> Option<DurationConfig> {
        match name {
            "paper" => Some(DurationConfig::paper()),
            "tiny" => Some(DurationConfig::tiny()),
            _ => None,
        }
    }

    /// Sizes a model can be built with (`dv_train::DurationModel::new`
    /// refuses the others with this error).
    pub fn check(&self) -> Result<(), ConfigError> {
        let c = self;
        if c.fc < 1 || c.gru < 1 || c.gru_layers < 1 || c.f0_points < 2 || !(0.0..1.0).contains(&c.dropout) {
            return Err(ConfigError { path: "[model]".into(), reason: format!("bad duration sizes {c:?}") });
        }
        Ok(())
    }

    /// Outputs per phoneme: duration, voicing logit, F0 points.
    pub fn outputs(&self) -> i64 {
        2 + self.f0_points
    }

    /// Target columns per phoneme in a `dv_train::Batch`: duration, voiced share,
    /// F0 points, and their voiced mask.
    pub fn target_width(&self) -> i64 {
        2 + 2 * self.f0_points
    }
}
