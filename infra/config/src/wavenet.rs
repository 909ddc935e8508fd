//! The WaveNet as a run trains it (Deep Voice App. A): the voice package's
//! architecture, which `dv-voice` defines with the Table 2 presets, plus
//! what only training chooses (precision, the fused step).

use dv_voice::{ConditioningConfig, PRESETS};
use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// The WaveNet and its conditioning network as a run trains them. A run
/// config's `[model.sizes]` writes it as one flat table: `layers`,
/// `residual_channels`, `skip_channels` and, with their defaults,
/// `dilation_cycle` (10), `quantization_channels` (256),
/// `conditioning_input` (227), `conditioning_hidden` (128), `qrnn_layers`
/// (2), `hop` (64), `bf16` (false) and `fused` (true).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "WavenetToml", into = "WavenetToml")]
pub struct WavenetConfig {
    /// ℓ, r, s and the dilation cycle (App. A.1): the package's `wavenet`.
    pub wavenet: dv_voice::WavenetConfig,
    /// The QRNN conditioning network (App. A.2): the package's
    /// `conditioning`. Its `stress` is the labels', which export reads from
    /// the data; a run config leaves it `true`.
    pub conditioning: ConditioningConfig,
    /// Output classes a: 8-bit mu-law (App. A.3: 256), the package's
    /// `quantization_channels`.
    pub quantization_channels: usize,
    /// Audio samples per conditioning frame: 16384 Hz / 256 Hz, the
    /// package's `sample_rate / frame_rate`.
    pub hop: usize,
    /// Run the forward pass in bfloat16 (master weights, optimizer and loss
    /// stay float32).
    pub bf16: bool,
    /// Train through the hand-written layer stack with the fused gate
    /// (`dv_train`'s `gate` module; `dv_train::Wavenet`'s docs, "Fused training
    /// step"). `false`: libtorch autograd over `Wavenet::logits`, the reference
    /// (slower).
    pub fused: bool,
}

/// `[model.sizes]` of a WaveNet run as written: one flat table, with the
/// keys and defaults every run config and checkpoint has used. A private
/// shape, converted to and from [`WavenetConfig`], because that nests
/// `dv-voice`'s sections and serde's `flatten`, which would map them, does
/// not work with `deny_unknown_fields` (serde's docs): a misspelt key must
/// stay an error that names it. Fields in the order they are written (a
/// checkpoint stores its run config as this TOML).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WavenetToml {
    layers: usize,
    residual_channels: usize,
    skip_channels: usize,
    /// Default: Table 2's 10.
    #[serde(default)]
    dilation_cycle: Option<usize>,
    /// Default: 256.
    #[serde(default)]
    quantization_channels: Option<usize>,
    /// Default: 227 (App. A.3).
    #[serde(default)]
    conditioning_input: Option<usize>,
    /// Default: 128.
    #[serde(default)]
    conditioning_hidden: Option<usize>,
    /// Default: 2 (App. A.2).
    #[serde(default)]
    qrnn_layers: Option<usize>,
    /// Default: 64.
    #[serde(default)]
    hop: Option<usize>,
    #[serde(default)]
    bf16: bool,
    #[serde(default = "yes")]
    fused: bool,
}

fn yes() -> bool {
    true
}

impl From<WavenetToml> for WavenetConfig {
    fn from(t: WavenetToml) -> WavenetConfig {
        let base = WavenetConfig::new(dv_voice::WavenetConfig::table2(t.layers, t.residual_channels, t.skip_channels));
        let (w, c) = (base.wavenet, base.conditioning);
        WavenetConfig {
            wavenet: dv_voice::WavenetConfig { dilation_cycle: t.dilation_cycle.unwrap_or(w.dilation_cycle), ..w },
            conditioning: ConditioningConfig {
                input_dim: t.conditioning_input.unwrap_or(c.input_dim),
                qrnn_layers: t.qrnn_layers.unwrap_or(c.qrnn_layers),
                hidden: t.conditioning_hidden.unwrap_or(c.hidden),
                stress: c.stress,
            },
            quantization_channels: t.quantization_channels.unwrap_or(base.quantization_channels),
            hop: t.hop.unwrap_or(base.hop),
            bf16: t.bf16,
            fused: t.fused,
        }
    }
}

impl From<WavenetConfig> for WavenetToml {
    fn from(c: WavenetConfig) -> WavenetToml {
        WavenetToml {
            layers: c.wavenet.layers,
            residual_channels: c.wavenet.residual_channels,
            skip_channels: c.wavenet.skip_channels,
            dilation_cycle: Some(c.wavenet.dilation_cycle),
            quantization_channels: Some(c.quantization_channels),
            conditioning_input: Some(c.conditioning.input_dim),
            conditioning_hidden: Some(c.conditioning.hidden),
            qrnn_layers: Some(c.conditioning.qrnn_layers),
            hop: Some(c.hop),
            bf16: c.bf16,
            fused: c.fused,
        }
    }
}

impl WavenetConfig {
    /// The WaveNet `wavenet` with the paper's conditioning network
    /// ([`ConditioningConfig::paper`]), 8-bit mu-law at 16384 Hz and
    /// 256 Hz frames (App. A.3), trained in float32 through the fused step.
    pub fn new(wavenet: dv_voice::WavenetConfig) -> WavenetConfig {
        WavenetConfig {
            wavenet,
            conditioning: ConditioningConfig::paper(true),
            quantization_channels: 256,
            hop: 64,
            bf16: false,
            fused: true,
        }
    }

    /// Presets: the Table 2 sizes by name `"ℓxrxs"` ([`dv_voice::PRESETS`]:
    /// `20x32x128`, `20x64x128`, `40x64x256`, `40x64x128`, `40x32x128`),
    /// `paper` (= `40x64x256`, the §4.4 timing model) and `tiny` (CPU tests).
    pub fn preset(name: &str) -> Option<WavenetConfig> {
        match name {
            "paper" => WavenetConfig::preset("40x64x256"),
            "tiny" => Some(WavenetConfig {
                conditioning: ConditioningConfig { hidden: 8, ..ConditioningConfig::paper(true) },
                ..WavenetConfig::new(dv_voice::WavenetConfig {
                    layers: 4,
                    residual_channels: 8,
                    skip_channels: 16,
                    dilation_cycle: 3,
                })
            }),
            _ => dv_voice::WavenetConfig::preset(name).map(WavenetConfig::new),
        }
    }

    /// The names [`WavenetConfig::preset`] knows, comma-separated.
    pub fn preset_names() -> String {
        let mut names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
        names.extend(["paper", "tiny"]);
        names.join(", ")
    }

    /// Sizes a WaveNet can be built with (`dv_train::Wavenet::new` refuses
    /// the others with this error).
    pub fn check(&self) -> Result<(), ConfigError> {
        let (w, c) = (&self.wavenet, &self.conditioning);
        let ok = w.layers >= 1
            && w.residual_channels >= 1
            && w.skip_channels >= 1
            && (1..=20).contains(&w.dilation_cycle)
            && self.quantization_channels == 256
            && c.input_dim >= 1
            && c.hidden >= 1
            && c.qrnn_layers >= 1
            && self.hop >= 1;
        if ok {
            Ok(())
        } else {
            Err(ConfigError { path: "[model]".into(), reason: format!("bad wavenet sizes {self:?}") })
        }
    }
}
