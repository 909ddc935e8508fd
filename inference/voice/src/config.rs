//! `config.json`: sizes, rates, phoneme inventory, F0 normalization, lineage.

use serde::{Deserialize, Serialize};

use crate::error::VoiceError;

/// The `format` string of every voice package.
pub const FORMAT_NAME: &str = "deepvoice-rs voice";
/// The format version this crate reads and writes.
pub const FORMAT_VERSION: u32 = 1;
/// Largest residual or skip width accepted (a sanity bound, far above
/// Table 2's sizes, that keeps a corrupt config from asking for gigabytes).
pub const MAX_CHANNELS: usize = 1024;
/// Largest `dilation_cycle` accepted: dilations up to 2^15.
pub const MAX_DILATION_CYCLE: usize = 16;

/// Everything in `config.json` (FORMAT.md, "config.json").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoiceConfig {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// Always [`FORMAT_VERSION`] for packages this crate reads.
    pub version: u64,
    /// Audio samples per second: 16384 (Deep Voice App. A.3).
    pub sample_rate: u32,
    /// Conditioning frames per second: 256 (App. A.3). Divides `sample_rate`.
    pub frame_rate: u32,
    /// Output alphabet a: 256 (8-bit mu-law, App. A.1). Only 256 is supported.
    pub quantization_channels: usize,
    /// The autoregressive WaveNet's sizes (App. A.1).
    pub wavenet: WavenetConfig,
    /// The conditioning network's sizes (App. A.2).
    pub conditioning: ConditioningConfig,
    /// Phoneme inventory, in the order of the one-hot slots of the
    /// conditioning frames.
    pub phonemes: Vec<String>,
    /// Width of the stress one-hot: 5 (App. A.3).
    pub stress_levels: usize,
    /// F0 normalization range of the conditioning frames.
    pub f0: F0Config,
    /// Where the weights came from.
    pub lineage: Lineage,
    /// The duration and F0 model (§3.3, App. B), when the package has one;
    /// a package without it holds a WaveNet only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<DurationConfig>,
    /// The grapheme-to-phoneme model (§3.1), when the package has one; it
    /// pronounces words missing from the lexicon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub g2p: Option<G2pConfig>,
}

/// WaveNet sizes (Deep Voice App. A.1): ℓ layers, r residual channels, s skip
/// channels, dilation `2^(i mod dilation_cycle)` for layer i.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WavenetConfig {
    /// ℓ, the number of residual layers.
    pub layers: usize,
    /// r, the width of the residual stack (a multiple of 8).
    pub residual_channels: usize,
    /// s, the width of the skip projection (a multiple of 8).
    pub skip_channels: usize,
    /// Dilations double for this many layers, then restart at 1.
    pub dilation_cycle: usize,
}

/// The model sizes of Deep Voice Table 2, as (name, config); names are
/// `"{ℓ}x{r}x{s}"`. All use a dilation cycle of 10.
pub const PRESETS: [(&str, WavenetConfig); 5] = [
    ("20x32x128", WavenetConfig::table2(20, 32, 128)),
    ("20x64x128", WavenetConfig::table2(20, 64, 128)),
    ("40x64x256", WavenetConfig::table2(40, 64, 256)),
    ("40x64x128", WavenetConfig::table2(40, 64, 128)),
    ("40x32x128", WavenetConfig::table2(40, 32, 128)),
];

impl WavenetConfig {
    /// Sizes ℓ, r, s with Table 2's dilation cycle of 10 (1, 2, …, 512).
    pub const fn table2(layers: usize, residual_channels: usize, skip_channels: usize) -> Self {
        Self { layers, residual_channels, skip_channels, dilation_cycle: 10 }
    }

    /// A Table 2 size by name (`"40x64x256"`), or `None`.
    pub fn preset(name: &str) -> Option<Self> {
        PRESETS.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
    }

    /// `"{ℓ}x{r}x{s}"`.
    pub fn name(&self) -> String {
        format!("{}x{}x{}", self.layers, self.residual_channels, self.skip_channels)
    }

    /// Dilation of layer `i` (0-based): `2^(i mod dilation_cycle)`.
    pub fn dilation(&self, i: usize) -> usize {
        1 << (i % self.dilation_cycle.max(1))
    }

    /// Receptive field in samples: `2 + Σ d_i` (the 2×1 input convolution
    /// sees two samples, each layer reaches `d_i` further back).
    pub fn receptive_field(&self) -> usize {
        2 + (0..self.layers).map(|i| self.dilation(i)).sum::<usize>()
    }
}

/// Conditioning network sizes (Deep Voice App. A.2): bidirectional QRNN
/// layers with fo-pooling and 2×1 convolutions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConditioningConfig {
    /// Width of one conditioning frame: 227 (App. A.3).
    pub input_dim: usize,
    /// Number of bidirectional QRNN layers: 2 (App. A.2).
    pub qrnn_layers: usize,
    /// H, the width of each direction of each QRNN layer.
    pub hidden: usize,
    /// Whether the frames' stress one-hots carry stress. `false`: the model
    /// was trained with every phoneme's stress "none" (a corpus whose labels
    /// have no stress), so a front end must feed `Stress::None`. Absent in
    /// older packages, meaning `true`.
    #[serde(default = "stress_default")]
    pub stress: bool,
}

fn stress_default() -> bool {
    true
}

impl ConditioningConfig {
    /// The paper's conditioning network: 227-wide frames (App. A.3) and two
    /// bidirectional QRNN layers (App. A.2), with H = 128, which the paper
    /// does not give (every preset uses it).
    pub const fn paper(stress: bool) -> Self {
        Self { input_dim: 227, qrnn_layers: 2, hidden: 128, stress }
    }
}

/// The duration and F0 model (Deep Voice §3.3, App. B): per phoneme, two
/// fully connected ReLU layers, GRU layers (unidirectional, or both ways) and a linear
/// output `[duration; voiced logit; F0 at f0_points points]` (FORMAT.md,
/// "Duration and F0 model").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DurationConfig {
    /// Width of one phoneme's input: phoneme one-hot then stress one-hot,
    /// `phonemes.len() + stress_levels` (45).
    pub input_dim: usize,
    /// Width of both fully connected layers: 256 (App. B).
    pub fc: usize,
    /// H, the width of each GRU layer: 128 (App. B).
    pub gru: usize,
    /// Number of GRU layers: 2 (App. B).
    pub gru_layers: usize,
    /// F0 values per phoneme, at `(j + 0.5) / f0_points` of its duration.
    pub f0_points: usize,
    /// Seconds per unit of the duration output.
    pub duration_unit_s: f64,
    /// Hz per unit of the F0 outputs.
    pub f0_unit_hz: f64,
    /// Whether the inputs carry stress; `false` means the model was trained
    /// with every stress "none", so a front end must feed `Stress::None`.
    pub stress: bool,
    /// Whether every GRU layer also reads the phonemes last to first
    /// (`duration.gru_rev.{k}`), so that a phoneme's duration and F0 see
    /// what follows it; the layer's output is both directions' states side
    /// by side (`2H`). Absent, false, in packages before it: the paper's
    /// unidirectional layers.
    #[serde(default, skip_serializing_if = "is_false")]
    pub bidirectional: bool,
}

impl DurationConfig {
    /// The paper's sizes (App. B: two 256-unit ReLU layers, two 128-unit GRU
    /// layers) over the 45-wide input of 40 phonemes and 5 stress levels,
    /// with this project's output convention: 20 F0 points, durations in
    /// 10 ms units and F0 in 100 Hz units.
    pub fn paper(stress: bool) -> Self {
        Self {
            input_dim: 45,
            fc: 256,
            gru: 128,
            gru_layers: 2,
            f0_points: 20,
            duration_unit_s: 0.01,
            f0_unit_hz: 100.0,
            stress,
            bidirectional: false,
        }
    }

    /// Width of one phoneme's output: `2 + f0_points`.
    pub fn output_dim(&self) -> usize {
        2 + self.f0_points
    }

    /// Width of a GRU layer's output: `gru`, twice that when bidirectional.
    pub fn gru_output(&self) -> usize {
        if self.bidirectional {
            2 * self.gru
        } else {
            self.gru
        }
    }
}

/// The letters the G2P encoder reads, at indices 1, 2, … (0 pads): a word
/// is lower-cased (ASCII) first.
pub const G2P_GRAPHEMES: &str = "abcdefghijklmnopqrstuvwxyz'-.";
/// The G2P decoder's end-of-word token (an output only).
pub const G2P_EOS: usize = 0;
/// Largest beam width a config may ask for.
pub const MAX_BEAM: usize = 256;

/// The grapheme-to-phoneme model (Deep Voice §3.1): bidirectional GRU
/// encoder layers over the letters, unidirectional GRU decoder layers over
/// `(phoneme, stress)` tokens, decoded by beam search (FORMAT.md,
/// "Grapheme-to-phoneme model").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct G2pConfig {
    /// E, the width of the letter and token embeddings (not given by the
    /// paper).
    pub embed: usize,
    /// H, the units of each GRU layer and direction (§3.1: 1024).
    pub hidden: usize,
    /// Encoder layers, and decoder layers (§3.1: 3 each).
    pub layers: usize,
    /// The letters at encoder indices 1, 2, …: always [`G2P_GRAPHEMES`].
    pub graphemes: String,
    /// Output classes: EOS (0) and `1 + phoneme · stress_levels + stress`,
    /// so `1 + phonemes.len() · stress_levels` (201). The decoder also
    /// reads BOS = `outputs`.
    pub outputs: usize,
    /// Beam width at inference (§3.1: 5).
    pub beam: usize,
    /// Attention over the encoder's top layer (FORMAT.md; not in §3.1).
    #[serde(default, skip_serializing_if = "is_false")]
    pub attention: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl G2pConfig {
    /// A config of sizes `embed`, `hidden` and `layers` over the fixed
    /// vocabularies, for a voice of `phonemes` phonemes and `stress_levels`
    /// stress levels, with the paper's beam width 5 (§3.1).
    pub fn new(embed: usize, hidden: usize, layers: usize, phonemes: usize, stress_levels: usize) -> Self {
        Self {
            embed,
            hidden,
            layers,
            graphemes: G2P_GRAPHEMES.to_string(),
            outputs: 1 + phonemes * stress_levels,
            beam: 5,
            attention: false,
        }
    }

    /// Rows of `g2p.enc_embed`: padding and one per grapheme (30).
    pub fn grapheme_rows(&self) -> usize {
        1 + self.graphemes.chars().count()
    }

    /// The decoder's start token, `outputs` (201); `g2p.dec_embed` has
    /// `outputs + 1` rows.
    pub fn bos(&self) -> usize {
        self.outputs
    }

    /// The encoder index of a letter (`a` = 1, after ASCII lower-casing),
    /// or `None` for a character outside [`G2pConfig::graphemes`].
    pub fn grapheme_index(&self, c: char) -> Option<usize> {
        let c = c.to_ascii_lowercase();
        self.graphemes.chars().position(|g| g == c).map(|i| i + 1)
    }
}

/// F0 range of the normalized log-F0 feature (App. A.3: Praat with minimum
/// 75 Hz and maximum 500 Hz).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct F0Config {
    pub min_hz: f64,
    pub max_hz: f64,
}

/// Where the weights came from. Informational: the reader checks only types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lineage {
    /// SHA-256 (hex) of the corpus manifest the model was trained on.
    pub corpus_manifest_sha256: String,
    /// The featurizer's settings, as the pipeline recorded them (free-form).
    pub featurizer: serde_json::Value,
    /// The checkpoint the weights were exported from.
    pub checkpoint: String,
    /// Training step of that checkpoint.
    pub step: u64,
    /// Version of the code that trained the model (a git describe).
    pub code_version: String,
    /// When the package was written (RFC 3339, UTC).
    pub created: String,
}

impl VoiceConfig {
    /// A version-1 config at the paper's rates (16384 Hz audio, 256 Hz
    /// frames, a = 256); check it with [`VoiceConfig::validate`].
    pub fn new(
        wavenet: WavenetConfig,
        conditioning: ConditioningConfig,
        phonemes: Vec<String>,
        stress_levels: usize,
        f0: F0Config,
        lineage: Lineage,
    ) -> Self {
        Self {
            format: FORMAT_NAME.to_string(),
            version: FORMAT_VERSION as u64,
            sample_rate: 16384,
            frame_rate: 256,
            quantization_channels: 256,
            wavenet,
            conditioning,
            phonemes,
            stress_levels,
            f0,
            lineage,
            duration: None,
            g2p: None,
        }
    }

    /// Audio samples per conditioning frame: `sample_rate / frame_rate`.
    pub fn hop(&self) -> usize {
        (self.sample_rate / self.frame_rate.max(1)) as usize
    }

    /// Width of the conditioning network's output: `ℓ · 2r`.
    pub fn conditioning_width(&self) -> usize {
        self.wavenet.layers * 2 * self.wavenet.residual_channels
    }

    /// Checks the format, the version and every size (see the crate docs).
    pub fn validate(&self) -> Result<(), VoiceError> {
        if self.format != FORMAT_NAME || self.version != FORMAT_VERSION as u64 {
            return Err(VoiceError::Version {
                format: self.format.clone(),
                version: self.version,
                expected: FORMAT_VERSION,
            });
        }
        let bad = |key: &'static str, reason: String| Err(VoiceError::InvalidValue { key, reason });
        if self.sample_rate == 0 || self.frame_rate == 0 || !self.sample_rate.is_multiple_of(self.frame_rate) {
            return bad(
                "sample_rate",
                format!("{} is not a positive multiple of frame_rate {}", self.sample_rate, self.frame_rate),
            );
        }
        if self.quantization_channels != 256 {
            return Err(VoiceError::Unsupported {
                what: format!("quantization_channels {} (only 256, 8-bit mu-law)", self.quantization_channels),
            });
        }
        let w = &self.wavenet;
        if w.layers == 0 {
            return bad("wavenet.layers", "must be at least 1".into());
        }
        for (key, v) in [("wavenet.residual_channels", w.residual_channels), ("wavenet.skip_channels", w.skip_channels)]
        {
            if v == 0 || v % 8 != 0 || v > MAX_CHANNELS {
                return Err(VoiceError::Unsupported {
                    what: format!("{key} {v} (must be a positive multiple of 8, at most {MAX_CHANNELS})"),
                });
            }
        }
        if w.dilation_cycle == 0 || w.dilation_cycle > MAX_DILATION_CYCLE {
            return bad("wavenet.dilation_cycle", format!("{} is outside 1..={MAX_DILATION_CYCLE}", w.dilation_cycle));
        }
        let c = &self.conditioning;
        if c.input_dim == 0 || c.qrnn_layers == 0 || c.hidden == 0 {
            return bad(
                "conditioning",
                format!(
                    "input_dim {}, qrnn_layers {}, hidden {} must all be positive",
                    c.input_dim, c.qrnn_layers, c.hidden
                ),
            );
        }
        if c.hidden > 4 * MAX_CHANNELS || c.input_dim > 16 * MAX_CHANNELS || c.qrnn_layers > 16 {
            return Err(VoiceError::Unsupported { what: format!("conditioning sizes {c:?}") });
        }
        if self.stress_levels == 0 {
            return bad("stress_levels", "must be at least 1".into());
        }
        if !(self.f0.min_hz.is_finite()
            && self.f0.min_hz > 0.0
            && self.f0.max_hz.is_finite()
            && self.f0.max_hz > self.f0.min_hz)
        {
            return bad("f0", format!("need 0 < min_hz < max_hz, got {} and {}", self.f0.min_hz, self.f0.max_hz));
        }
        if let Some(d) = &self.duration {
            self.validate_duration(d)?;
        }
        if let Some(g) = &self.g2p {
            self.validate_g2p(g)?;
        }
        Ok(())
    }

    fn validate_duration(&self, d: &DurationConfig) -> Result<(), VoiceError> {
        let bad = |key: &'static str, reason: String| Err(VoiceError::InvalidValue { key, reason });
        let input = self.phonemes.len() + self.stress_levels;
        if d.input_dim != input {
            return bad(
                "duration.input_dim",
                format!(
                    "{} is not phonemes ({}) + stress_levels ({}) = {input}",
                    d.input_dim,
                    self.phonemes.len(),
                    self.stress_levels
                ),
            );
        }
        if d.fc == 0 || d.gru == 0 || d.gru_layers == 0 || d.f0_points == 0 {
            return bad(
                "duration",
                format!(
                    "fc {}, gru {}, gru_layers {}, f0_points {} must all be positive",
                    d.fc, d.gru, d.gru_layers, d.f0_points
                ),
            );
        }
        if d.fc > 4 * MAX_CHANNELS || d.gru > 4 * MAX_CHANNELS || d.gru_layers > 16 || d.f0_points > MAX_CHANNELS {
            return Err(VoiceError::Unsupported { what: format!("duration sizes {d:?}") });
        }
        for (key, v) in [("duration.duration_unit_s", d.duration_unit_s), ("duration.f0_unit_hz", d.f0_unit_hz)] {
            if !(v.is_finite() && v > 0.0) {
                return bad(key, format!("{v} is not a positive finite number"));
            }
        }
        Ok(())
    }

    fn validate_g2p(&self, g: &G2pConfig) -> Result<(), VoiceError> {
        let bad = |key: &'static str, reason: String| Err(VoiceError::InvalidValue { key, reason });
        if g.graphemes != G2P_GRAPHEMES {
            return Err(VoiceError::Unsupported {
                what: format!("g2p.graphemes {:?} (only {G2P_GRAPHEMES:?})", g.graphemes),
            });
        }
        let outputs = 1 + self.phonemes.len() * self.stress_levels;
        if g.outputs != outputs {
            return bad(
                "g2p.outputs",
                format!(
                    "{} is not 1 + phonemes ({}) · stress_levels ({}) = {outputs}",
                    g.outputs,
                    self.phonemes.len(),
                    self.stress_levels
                ),
            );
        }
        if g.embed == 0 || g.hidden == 0 || g.layers == 0 {
            return bad(
                "g2p",
                format!("embed {}, hidden {}, layers {} must all be positive", g.embed, g.hidden, g.layers),
            );
        }
        if g.embed > 4 * MAX_CHANNELS || g.hidden > 4 * MAX_CHANNELS || g.layers > 16 {
            return Err(VoiceError::Unsupported { what: format!("g2p sizes {g:?}") });
        }
        if g.beam == 0 || g.beam > MAX_BEAM {
            return bad("g2p.beam", format!("{} is outside 1..={MAX_BEAM}", g.beam));
        }
        Ok(())
    }
}

/// Keys `config.json` may hold, by section; anything else is
/// [`VoiceError::UnknownKey`]. `lineage.featurizer` is free-form.
pub(crate) const KNOWN_KEYS: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "format",
            "version",
            "sample_rate",
            "frame_rate",
            "quantization_channels",
            "wavenet",
            "conditioning",
            "phonemes",
            "stress_levels",
            "f0",
            "lineage",
            "duration",
            "g2p",
        ],
    ),
    ("wavenet", &["layers", "residual_channels", "skip_channels", "dilation_cycle"]),
    ("conditioning", &["input_dim", "qrnn_layers", "hidden", "stress"]),
    ("f0", &["min_hz", "max_hz"]),
    (
        "duration",
        &["input_dim", "fc", "gru", "gru_layers", "f0_points", "duration_unit_s", "f0_unit_hz", "stress", "bidirectional"],
    ),
    ("g2p", &["embed", "hidden", "layers", "graphemes", "outputs", "beam", "attention"]),
    ("lineage", &["corpus_manifest_sha256", "featurizer", "checkpoint", "step", "code_version", "created"]),
];
