//! The grapheme-to-phoneme model (§3.1) in a voice package: a G2P
//! checkpoint in the package's terms, as the libtorch-free G2P runs it, and
//! adding one to a package with golden words.

use std::fmt;
use std::path::{Path, PathBuf};

use dv_text::{Phoneme, Stress};
use dv_torch::tch;
use dv_voice::{G2pGolden, G2pWord, Voice, Weights};

use super::weights::voice_weights;
use crate::checkpoint::{load_model_weights, open, Opened};
use crate::{DataConfig, Dataset, G2p, G2pConfig, LexiconConfig, Model, Pronunciations, TrainError};

/// Words of the run's test split decoded into a package's G2P golden
/// outputs by default.
pub const GOLDEN_WORDS: usize = 20;

/// A left-to-right G2P checkpoint of `dv train` in the voice format: its
/// package section for a voice of some phonemes and stress levels, its
/// `g2p.*` tensors, and the libtorch model with its sizes, data and step.
pub struct G2pCheckpoint {
    pub config: dv_voice::G2pConfig,
    pub weights: Weights,
    pub model: G2p,
    pub sizes: G2pConfig,
    pub lexicon: LexiconConfig,
    pub step: u64,
}

/// Reads the G2P checkpoint `path` for a voice of `phonemes` phonemes and
/// `stress_levels` stress levels (see [`G2pCheckpoint`]). A right-to-left
/// model (`[data] reverse = true`) only rescores and is refused.
pub fn g2p_checkpoint(path: &Path, phonemes: usize, stress_levels: usize) -> Result<G2pCheckpoint, TrainError> {
    let Opened { name, data: ck, config: cfg } = open(path)?;
    let sizes =
        cfg.g2p_sizes(&name).map_err(|source| TrainError::NotModel { name: name.clone(), model: "G2P", source })?;
    let DataConfig::Lexicon(lexicon) = cfg.data.clone() else {
        return Err(TrainError::Export { name, reason: "not a G2P run".into() });
    };
    if lexicon.reverse {
        let reason = "a right-to-left G2P ([data] reverse = true) only rescores (dv evaluate --rescore-with); \
                      export a left-to-right one"
            .into();
        return Err(TrainError::Export { name, reason });
    }
    let model = G2p::new(&sizes, tch::Device::Cpu)?;
    load_model_weights(&name, &ck, &model)?;
    let g = &sizes.g2p;
    let config = dv_voice::G2pConfig {
        beam: g.beam,
        attention: g.attention,
        ..dv_voice::G2pConfig::new(g.embed, g.hidden, g.layers, phonemes, stress_levels)
    };
    let weights = voice_weights(model.named_parameters())?;
    Ok(G2pCheckpoint { config, weights, model, sizes, lexicon, step: ck.state.step })
}

/// The G2P checkpoint `path` as the inference side runs it (`dv_synth::G2p`,
/// as in a voice package), over `dv_text`'s phonemes and stress levels: what
/// `dv g2p`, `dv synth` and `dv recipe` use for words missing from the
/// lexicon.
pub fn load_g2p(path: &Path) -> Result<dv_synth::G2p, TrainError> {
    let g = g2p_checkpoint(path, Phoneme::COUNT, Stress::COUNT)?;
    dv_synth::G2p::from_weights(g.config, Stress::COUNT, &g.weights)
        .map_err(|source| TrainError::G2pFormat { path: path.display().to_string(), source })
}

/// What [`add_g2p`] wrote.
#[derive(Debug, Clone)]
pub struct G2pAdded {
    pub out: PathBuf,
    /// The package it started from.
    pub voice: PathBuf,
    /// The G2P checkpoint, by name, and its step.
    pub checkpoint: String,
    pub step: u64,
    /// The model's `g2p` section as written.
    pub config: dv_voice::G2pConfig,
    /// Golden words written (none when the package has no golden outputs).
    pub golden_words: usize,
}

impl fmt::Display for G2pAdded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        write!(
            f,
            "wrote {}: {} plus the G2P model of {} (step {}, {}+{} GRU layers x {}{}, beam {}, {} golden words)",
            self.out.display(),
            self.voice.display(),
            self.checkpoint,
            self.step,
            c.layers,
            c.layers,
            c.hidden,
            if c.attention { " with attention" } else { "" },
            c.beam,
            self.golden_words
        )
    }
}

/// Adds the G2P model of the checkpoint `g2p` to the voice package `voice`
/// and writes the result to `out` (which may be `voice`), replacing any G2P
/// model it had. When the package has golden outputs, the first
/// `golden_words` words of the run's test split, decoded by the trainer's
/// beam search, join them.
pub fn add_g2p(voice: &Path, g2p: &Path, golden_words: usize, out: &Path) -> Result<G2pAdded, TrainError> {
    let v = Voice::read(voice).map_err(|source| TrainError::ReadVoice { path: voice.display().to_string(), source })?;
    let mut config = v.config().clone();
    let G2pCheckpoint { config: section, weights: g2p_weights, model, sizes, lexicon, step } =
        g2p_checkpoint(g2p, config.phonemes.len(), config.stress_levels)?;
    config.g2p = Some(section.clone());
    let mut weights = v.weights().clone();
    weights.retain(|k, _| !k.starts_with("g2p."));
    weights.extend(g2p_weights);
    let split = Pronunciations::load(&lexicon)?;
    let mut words = Vec::new();
    for i in 0..split.test.len().min(golden_words) {
        let (toks, _) = model.beam(&split.test.letters[i], sizes.g2p.beam)?;
        words.push(G2pWord {
            letters: split.test.letters[i].iter().map(|&l| l as usize).collect(),
            tokens: toks.iter().map(|&t| t as usize).collect(),
        });
    }
    let mut out_voice = Voice::new(config, weights)?;
    match v.golden() {
        Some(g) => {
            let mut g = g.clone();
            g.g2p = if words.is_empty() { None } else { Some(G2pGolden::new(out_voice.config(), &words)?) };
            out_voice = out_voice.with_golden(g)?;
        }
        None => words.clear(), // golden words live beside the WaveNet's golden outputs
    }
    out_voice.save(out)?;
    Ok(G2pAdded {
        out: out.to_path_buf(),
        voice: voice.to_path_buf(),
        checkpoint: g2p.display().to_string(),
        step,
        config: section,
        golden_words: words.len(),
    })
}
