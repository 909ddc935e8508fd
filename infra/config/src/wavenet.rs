//! The WaveNet's and its conditioning network's sizes (Deep Voice App. A).

use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// Sizes of the WaveNet and its conditioning network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WavenetConfig {
    /// Residual layers ℓ (App. A.1; Table 2 uses 20 and 40).
    pub layers: i64,
    /// Residual channels r (32 or 64 in Table 2).
    pub residual_channels: i64,
    /// Skip channels s (128 or 256 in Table 2).
    pub skip_channels: i64,
    /// Dilations double within cycles of this many layers.
    #[serde(default = "ten")]
    pub dilation_cycle: i64,
    /// Output classes a: 8-bit mu-law (App. A.3: 256).
    #[serde(default = "two_five_six")]
    pub quantization_channels: i64,
    /// Conditioning features per frame (App. A.3: 227).
    #[serde(default = "two_two_seven")]
    pub conditioning_input: i64,
    /// QRNN units per direction. The paper does not give it; presets use 128.
    #[serde(default = "one_two_eight")]
    pub conditioning_hidden: i64,
    /// Bidirectional QRNN layers (App. A.2: 2).
    #[serde(default = "two")]
    pub qrnn_layers: i64,
    /// Audio samples per conditioning frame: 16384 Hz / 256 Hz.
    #[serde(default = "sixty_four")]
    pub hop: i64,
    /// Run the forward pass in bfloat16 (master weights, optimizer and loss
    /// stay float32).
    #[serde(default)]
    pub bf16: bool,
    /// Train through the hand-written layer stack with the fused gate
    /// (`dv_train`'s `gate` module; `dv_train::Wavenet`'s docs, "Fused training
    /// step"). `false`: libtorch autograd over `Wavenet::logits`, the reference
    /// (slower).
    #[serde(default = "yes")]
    pub fused: bool,
}

fn yes() -> bool {
    true
}

fn ten() -> i64 {
    10
}
fn two_five_six() -> i64 {
    256
}
fn two_two_seven() -> i64 {
    227
}
fn one_two_eight() -> i64 {
    128
}
fn two() -> i64 {
    2
}
fn sixty_four() -> i64 {
    64
}

impl WavenetConfig {
    /// A Table 2 size `(ℓ, r, s)` with the other fields at their defaults.
    pub fn sized(layers: i64, residual_channels: i64, skip_channels: i64) -> WavenetConfig {
        WavenetConfig {
            layers,
            residual_channels,
            skip_channels,
            dilation_cycle: 10,
            quantization_channels: 256,
            conditioning_input: 227,
            conditioning_hidden: 128,
            qrnn_layers: 2,
            hop: 64,
            bf16: false,
            fused: true,
        }
    }

    /// Presets: the Table 2 sizes by name `"ℓxrxs"` (`20x32x128`,
    /// `20x64x128`, `40x64x256`, `40x64x128`, `40x32x128`), `paper`
    /// (= `40x64x256`, the §4.4 timing model) and `tiny` (CPU tests).
    pub fn preset(name: &str) -> Option<WavenetConfig> {
        let sized = |l, r, s| Some(WavenetConfig::sized(l, r, s));
        match name {
            "20x32x128" => sized(20, 32, 128),
            "20x64x128" => sized(20, 64, 128),
            "40x64x256" | "paper" => sized(40, 64, 256),
            "40x64x128" => sized(40, 64, 128),
            "40x32x128" => sized(40, 32, 128),
            "tiny" => {
                Some(WavenetConfig { dilation_cycle: 3, conditioning_hidden: 8, ..WavenetConfig::sized(4, 8, 16) })
            }
            _ => None,
        }
    }

    pub fn dilation(&self, layer: i64) -> i64 {
        1 << (layer % self.dilation_cycle)
    }

    /// Samples the output at t can see: `2 + Σ d_i`.
    pub fn receptive_field(&self) -> i64 {
        2 + (0..self.layers).map(|i| self.dilation(i)).sum::<i64>()
    }

    /// Sizes a WaveNet can be built with (`dv_train::Wavenet::new` refuses
    /// the others with this error).
    pub fn check(&self) -> Result<(), ConfigError> {
        let ok = self.layers >= 1
            && self.residual_channels >= 1
            && self.skip_channels >= 1
            && (1..=20).contains(&self.dilation_cycle)
            && self.quantization_channels == 256
            && self.conditioning_input >= 1
            && self.conditioning_hidden >= 1
            && self.qrnn_layers >= 1
            && self.hop >= 1;
        if ok {
            Ok(())
        } else {
            Err(ConfigError { path: "[model]".into(), reason: format!("bad wavenet sizes {self:?}") })
        }
    }
}
