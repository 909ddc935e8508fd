//! `[data]`: the datasets a run trains on, by kind.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// A learnable stand-in for MFCC frames and phoneme-pair labels, generated
/// from the seed alone: every label `c` has a fixed random mean vector, an
/// example is 2–8 labels, each held for 3–6 frames of that mean plus
/// Gaussian-like noise. CTC can learn it; tests and throughput benchmarks use
/// it where the real corpus is not needed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticConfig {
    pub examples: usize,
    /// Features per frame.
    pub features: i64,
    /// Label classes, excluding the CTC blank (labels are `1..=classes`).
    pub classes: i64,
    /// Frames per label, inclusive range.
    #[serde(default = "default_frames")]
    pub frames_per_label: (usize, usize),
    /// Labels per example, inclusive range.
    #[serde(default = "default_labels")]
    pub labels: (usize, usize),
    pub seed: u64,
}

fn default_frames() -> (usize, usize) {
    (3, 6)
}
fn default_labels() -> (usize, usize) {
    (2, 8)
}

impl SyntheticConfig {
    /// Settings the data can be generated with (`dv_train::Synthetic::new`
    /// refuses the others with this error).
    pub fn check(&self) -> Result<(), ConfigError> {
        let c = self;
        let (f, l) = (c.frames_per_label, c.labels);
        if c.examples == 0 || c.features < 1 || c.classes < 1 || f.0 < 1 || f.0 > f.1 || l.0 < 1 || l.0 > l.1 {
            return Err(ConfigError { path: "[data]".into(), reason: format!("bad synthetic data {c:?}") });
        }
        Ok(())
    }
}

/// MFCCs per 10 ms frame in featurize output (§3.2: 20).
pub const FEATURE_MFCC: usize = 20;
/// Seconds per MFCC frame.
pub const FRAME_SECONDS: f64 = 0.01;
/// Output classes of a segmentation model trained on these labels: 1600
/// phoneme pairs plus the CTC blank.
pub const PAIR_CLASSES: i64 = dv_text::PhonemePair::COUNT as i64 + 1;

/// `[data] kind = "features"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeaturesConfig {
    /// A `dv featurize --out` directory: a local path or a `file://` URL.
    pub url: String,
    /// Share of utterances held out for validation, in `[0, 1)`.
    #[serde(default = "default_validation_fraction")]
    pub validation_fraction: f64,
    /// Seeds the validation split (`dv_train::is_validation`).
    #[serde(default)]
    pub seed: u64,
    /// Utterances longer than this many frames are skipped (memory bound).
    #[serde(default)]
    pub max_frames: Option<usize>,
}

fn default_validation_fraction() -> f64 {
    0.05
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// `[data] kind = "chunks"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChunksConfig {
    /// A `dv featurize --out` directory: a local path or a `file://` URL.
    pub url: String,
    /// Share of utterances held out for validation, in `[0, 1)`.
    #[serde(default = "default_validation_fraction")]
    pub validation_fraction: f64,
    #[serde(default)]
    pub seed: u64,
    /// Fixed F0 normalization range (Hz); both or neither.
    #[serde(default)]
    pub f0_min_hz: Option<f32>,
    #[serde(default)]
    pub f0_max_hz: Option<f32>,
    /// Conditioning noise for training chunks (0, the default, is none): each
    /// training chunk's normalized log F0 (voiced frames) moves by a random
    /// offset of this standard deviation plus a random slope across the chunk
    /// of half of it, so that the WaveNet learns to follow a contour that is
    /// not the recording's own, as the duration/F0 model's predicted one is
    /// not (Deep Voice Table 1 loses most of its MOS from true to predicted
    /// F0). In normalized units: the voice's F0 range spans 2. Validation
    /// chunks are never perturbed.
    #[serde(default)]
    pub f0_jitter: f32,
    /// Share of training chunks, in `[0, 1]`, conditioned on the F0 that the
    /// duration/F0 model `f0_predicted_from` predicts for the utterance's
    /// aligned phones at their aligned times, instead of the recording's own
    /// (0, the default, is none): ground-truth-aligned conditioning, as
    /// Tacotron 2 trains its vocoder on predicted features, so that the
    /// WaveNet learns the contours it will be given when speaking text.
    /// Which chunks is fixed by the batch, as `f0_jitter`'s noise is.
    /// Validation chunks keep the recording's F0.
    #[serde(default)]
    pub f0_predicted: f32,
    /// A duration/F0 checkpoint written by `dv train` (needed when
    /// `f0_predicted` > 0; a recipe fills in its own train-duration output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f0_predicted_from: Option<String>,
    /// Whether phones carry the stress their names give (`AH1`, as the
    /// recipe writes CMUDict's; true, the default). False feeds every phone
    /// as unstressed, as before phones carried stress: for a WaveNet
    /// fine-tuned from a voice whose conditioning never saw stress.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub stress: bool,
}

/// `[data] kind = "prosody"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProsodyConfig {
    /// A `dv featurize --out` directory: a local path or a `file://` URL.
    pub url: String,
    /// A `dv align` output's `alignments.parquet`: training phone times from
    /// the aligner (`dv_train::prosody`'s docs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alignments: Option<String>,
    #[serde(default = "default_validation_fraction")]
    pub validation_fraction: f64,
    #[serde(default)]
    pub seed: u64,
    /// Whether phones carry the stress their names give (`AH1`, as the
    /// recipe writes CMUDict's; true, the default). False feeds every phone
    /// as unstressed, as before phones carried stress: to measure what stress gives.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub stress: bool,
}

/// `[data] kind = "lexicon"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LexiconConfig {
    /// CMUDict file (default: `$DV_CMUDICT`, else the CMUDict built into the binary).
    #[serde(default)]
    pub cmudict: Option<PathBuf>,
    /// Share of words held out for testing.
    #[serde(default = "five_percent")]
    pub test_fraction: f64,
    /// Share held out for validation (the dev set).
    #[serde(default = "five_percent")]
    pub dev_fraction: f64,
    #[serde(default)]
    pub seed: u64,
    /// Output the pronunciations right to left: a model for rescoring a
    /// left-to-right model's hypotheses (`dv evaluate --rescore-with`), not
    /// for serving (`dv export --g2p` refuses it). The split is unchanged.
    #[serde(default)]
    pub reverse: bool,
}

fn five_percent() -> f64 {
    0.05
}
