//! The segmentation network's sizes (Deep Voice §3.2).

use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// Sizes of the segmentation network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentationConfig {
    /// MFCCs per 10 ms frame (§3.2: 20).
    pub mfcc: i64,
    /// Output channels of each convolution. The paper does not give them;
    /// the `paper` preset uses 32.
    pub conv_channels: i64,
    /// Convolution kernel height in frequency bins (§3.2: 9).
    pub kernel_freq: i64,
    /// Convolution kernel width in frames (§3.2: 5).
    pub kernel_time: i64,
    /// GRU cells per direction (§3.2: 512).
    pub gru: i64,
    /// Bidirectional GRU layers (§3.2: 3).
    pub gru_layers: i64,
    /// Output classes including the blank (40 × 40 phoneme pairs + 1).
    pub classes: i64,
    /// Drop probability after the last convolution and the last recurrent
    /// layer. §3.2 writes "dropout with a probability of 0.95", which only
    /// makes sense as a keep probability: the preset drops 0.05.
    pub dropout: f64,
}

impl SegmentationConfig {
    /// Deep Voice §3.2.
    pub fn paper() -> SegmentationConfig {
        SegmentationConfig {
            mfcc: 20,
            conv_channels: 32,
            kernel_freq: 9,
            kernel_time: 5,
            gru: 512,
            gru_layers: 3,
            classes: 40 * 40 + 1,
            dropout: 0.05,
        }
    }

    /// A few thousand parameters, for CPU tests.
    pub fn tiny() -> SegmentationConfig {
        SegmentationConfig { conv_channels: 4, gru: 16, gru_layers: 1, classes: 17, ..SegmentationConfig::paper() }
    }

    pub fn preset(name: &str) -> Option<SegmentationConfig> {
        match name {
            "paper" => Some(SegmentationConfig::paper()),
            "tiny" => Some(SegmentationConfig::tiny()),
            _ => None,
        }
    }

    /// Sizes a network can be built with (`dv_train::Segmentation::new`
    /// refuses the others with this error).
    pub fn check(&self) -> Result<(), ConfigError> {
        let c = self;
        if c.mfcc < 1
            || c.conv_channels < 1
            || c.gru < 1
            || c.gru_layers < 1
            || c.classes < 2
            || !(0.0..1.0).contains(&c.dropout)
        {
            return Err(ConfigError { path: "[model]".into(), reason: format!("bad segmentation sizes {c:?}") });
        }
        Ok(())
    }
}
