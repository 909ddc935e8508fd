//! The grapheme-to-phoneme model's sizes (Deep Voice §3.1).

use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// Sizes of the G2P model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct G2pConfig {
    /// Letter and phoneme embedding width (not given by the paper).
    pub embed: i64,
    /// GRU units per layer and direction (§3.1: 1024).
    pub hidden: i64,
    /// Encoder and decoder layers (§3.1: 3).
    #[serde(default = "three")]
    pub layers: i64,
    /// Drop probability after each recurrent layer (`dv_train::g2p`'s docs).
    #[serde(default = "point_zero_five")]
    pub dropout: f64,
    /// Beam width at inference (§3.1: 5).
    #[serde(default = "five")]
    pub beam: usize,
    /// Attention over the encoder outputs (`dv_train::g2p`'s docs; not in §3.1).
    #[serde(default)]
    pub attention: bool,
    /// Label smoothing ε of the training loss (Szegedy et al. 2016; not in
    /// §3.1): `(1 − ε) · CE + ε · mean over classes of −log p`. Validation
    /// and evaluation score plain cross-entropy.
    #[serde(default)]
    pub label_smoothing: f64,
}

fn three() -> i64 {
    3
}
fn five() -> usize {
    5
}
fn point_zero_five() -> f64 {
    0.05
}

impl G2pConfig {
    /// §3.1: 3 + 3 layers of 1024 (about 60 M parameters, 240 MB).
    pub fn paper() -> G2pConfig {
        G2pConfig {
            embed: 256,
            hidden: 1024,
            layers: 3,
            dropout: 0.05,
            beam: 5,
            attention: false,
            label_smoothing: 0.0,
        }
    }

    /// The size shipped for out-of-vocabulary words: 3 + 3 layers of 160,
    /// 1.6 M parameters (6.3 MB in float32, under the 8 MB budget).
    pub fn compact() -> G2pConfig {
        G2pConfig { embed: 64, hidden: 160, ..G2pConfig::paper() }
    }

    pub fn tiny() -> G2pConfig {
        G2pConfig { embed: 8, hidden: 16, layers: 2, ..G2pConfig::paper() }
    }

    pub fn preset(name: &str) -> Option<G2pConfig> {
        match name {
            "paper" => Some(G2pConfig::paper()),
            "compact" => Some(G2pConfig::compact()),
            "tiny" => Some(G2pConfig::tiny()),
            _ => None,
        }
    }

    /// Sizes a model can be built with (`dv_train::G2p::new` refuses the
    /// others with this error).
    pub fn check(&self) -> Result<(), ConfigError> {
        let c = self;
        if c.embed < 1
            || c.hidden < 1
            || c.layers < 1
            || !(0.0..1.0).contains(&c.dropout)
            || c.beam < 1
            || !(0.0..1.0).contains(&c.label_smoothing)
        {
            return Err(ConfigError { path: "[model]".into(), reason: format!("bad g2p sizes {c:?}") });
        }
        Ok(())
    }
}
