//! The grapheme-to-phoneme model as a run trains it (Deep Voice §3.1): the
//! voice package's architecture (`dv_voice::G2pConfig`) plus the training
//! loss's dropout and label smoothing.

use dv_text::{Phoneme, Stress};
use dv_voice::G2P_GRAPHEMES;
use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// The G2P model as a run trains it. A run config's `[model.sizes]` writes
/// it as one flat table: `embed`, `hidden` and, with their defaults, `layers`
/// (3), `dropout` (0.05), `beam` (5), `attention` (false) and
/// `label_smoothing` (0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "G2pToml", into = "G2pToml")]
pub struct G2pConfig {
    /// The sizes, beam width and attention: the package's `g2p` (§3.1),
    /// over the trainer's vocabularies (the letters [`G2P_GRAPHEMES`], and
    /// 40 phonemes × 5 stress levels plus EOS).
    pub g2p: dv_voice::G2pConfig,
    /// Drop probability after each recurrent layer (`dv_train::g2p`'s docs).
    pub dropout: f64,
    /// Label smoothing ε of the training loss (Szegedy et al. 2016; not in
    /// §3.1): `(1 − ε) · CE + ε · mean over classes of −log p`. Validation
    /// and evaluation score plain cross-entropy.
    pub label_smoothing: f64,
}

/// `[model.sizes]` of a G2P run as written: one flat table. A private shape
/// for the reason `WavenetToml` is one (`wavenet.rs`): the struct nests
/// `dv-voice`'s section, and `flatten` does not work with
/// `deny_unknown_fields`. Fields in the order they are written.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct G2pToml {
    embed: usize,
    hidden: usize,
    #[serde(default)]
    layers: Option<usize>,
    #[serde(default)]
    dropout: Option<f64>,
    #[serde(default)]
    beam: Option<usize>,
    #[serde(default)]
    attention: bool,
    #[serde(default)]
    label_smoothing: f64,
}

impl From<G2pToml> for G2pConfig {
    fn from(t: G2pToml) -> G2pConfig {
        let paper = G2pConfig::paper();
        let mut g2p = G2pConfig::sized(t.embed, t.hidden, t.layers.unwrap_or(paper.g2p.layers));
        g2p.beam = t.beam.unwrap_or(paper.g2p.beam);
        g2p.attention = t.attention;
        G2pConfig { g2p, dropout: t.dropout.unwrap_or(paper.dropout), label_smoothing: t.label_smoothing }
    }
}

impl From<G2pConfig> for G2pToml {
    fn from(c: G2pConfig) -> G2pToml {
        G2pToml {
            embed: c.g2p.embed,
            hidden: c.g2p.hidden,
            layers: Some(c.g2p.layers),
            dropout: Some(c.dropout),
            beam: Some(c.g2p.beam),
            attention: c.g2p.attention,
            label_smoothing: c.label_smoothing,
        }
    }
}

impl G2pConfig {
    /// The package section of sizes `embed`, `hidden` and `layers` over the
    /// trainer's vocabularies, beam 5 (§3.1), no attention.
    fn sized(embed: usize, hidden: usize, layers: usize) -> dv_voice::G2pConfig {
        dv_voice::G2pConfig::new(embed, hidden, layers, Phoneme::COUNT, Stress::COUNT)
    }

    /// §3.1: 3 + 3 layers of 1024 (about 60 M parameters, 240 MB).
    pub fn paper() -> G2pConfig {
        G2pConfig { g2p: G2pConfig::sized(256, 1024, 3), dropout: 0.05, label_smoothing: 0.0 }
    }

    /// The size shipped for out-of-vocabulary words: 3 + 3 layers of 160,
    /// 1.6 M parameters (6.3 MB in float32, under the 8 MB budget).
    pub fn compact() -> G2pConfig {
        G2pConfig { g2p: G2pConfig::sized(64, 160, 3), ..G2pConfig::paper() }
    }

    pub fn tiny() -> G2pConfig {
        G2pConfig { g2p: G2pConfig::sized(8, 16, 2), ..G2pConfig::paper() }
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
    /// others with this error), over the trainer's vocabularies.
    pub fn check(&self) -> Result<(), ConfigError> {
        let (c, g) = (self, &self.g2p);
        if g.embed < 1
            || g.hidden < 1
            || g.layers < 1
            || !(0.0..1.0).contains(&c.dropout)
            || g.beam < 1
            || !(0.0..1.0).contains(&c.label_smoothing)
            || g.graphemes != G2P_GRAPHEMES
            || g.outputs != 1 + Phoneme::COUNT * Stress::COUNT
        {
            return Err(ConfigError { path: "[model]".into(), reason: format!("bad g2p sizes {c:?}") });
        }
        Ok(())
    }
}
