use std::path::PathBuf;

use dv_torch::tch;
use serde::Serialize;

/// Where the boundaries come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decoder {
    /// CTC Viterbi over each utterance's known pair sequence.
    Viterbi,
    /// §3.2's beam search over chained pairs (no transcript needed).
    Beam,
}

/// Where [`Decoder::Viterbi`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViterbiOn {
    /// The CPU reference, utterance by utterance.
    Cpu,
    /// dv-align's CUDA kernel, a batch per launch (bit-identical paths); on
    /// GPU 0 when the model runs on the CPU.
    Cuda,
    /// CUDA when the model runs on a GPU, else the CPU.
    Auto,
}

/// What [`super::align`] aligns, with which model, and how. [`AlignOptions::new`]
/// gives `dv align`'s defaults.
#[derive(Clone, Debug)]
pub struct AlignOptions {
    /// A `dv featurize` output (directory or `file://` URL) whose shards carry
    /// the phones to align (`ref_phones`).
    pub features: String,
    /// A segmentation checkpoint written by `dv train`.
    pub checkpoint: PathBuf,
    /// Output directory (module docs).
    pub out: PathBuf,
    /// Where the model's forward pass runs (the CPU or a CUDA device).
    pub device: tch::Device,
    /// Utterances per forward pass, at least 1.
    pub batch: usize,
    pub decoder: Decoder,
    pub viterbi: ViterbiOn,
    /// Beam width of [`Decoder::Beam`] (§3.2: 50).
    pub beam_width: usize,
    /// Beam width of the CTC prefix beam search that measures the
    /// phoneme-pair error rate (PPER, §3.2) against each utterance's
    /// reference pairs; 0 skips it.
    pub pper_beam: usize,
    /// Quarantine utterances whose confidence is below median − k × 1.4826 ×
    /// MAD of their group ([`dv_align::quarantine_by_group`]).
    pub quarantine_k: f64,
    /// Utterances to draw to `<out>/plots/<id>.png`: the log-mel spectrogram
    /// with the predicted (and reference) boundaries.
    pub plots: Vec<String>,
    /// Align only the utterances the checkpoint's training run held out for
    /// validation (its `[data] validation_fraction` and `seed`).
    pub held_out: bool,
    /// The edge pauses end where speech starts and stops: the first and last
    /// frames within this many dB of the loudest (as `librosa.effects.trim`;
    /// Coqui TTS's default `trim_db` is 45). CTC does not tie the first and
    /// last pairs to a moment: the model's own edge boundaries are not used
    /// when they fall inside the pause, and every other pair is decoded
    /// inside speech (`dv_align::confine_labels`).
    /// 0 keeps the model's.
    pub trim_db: f64,
}

impl AlignOptions {
    /// Utterances per forward pass by default.
    pub const BATCH: usize = 16;
    /// §3.2's beam width.
    pub const BEAM_WIDTH: usize = 50;
    /// The PPER's prefix beam width by default.
    pub const PPER_BEAM: usize = 10;
    /// Coqui TTS's default `trim_db`.
    pub const TRIM_DB: f64 = 45.0;

    /// `dv align`'s defaults: the CPU, batches of [`Self::BATCH`], Viterbi
    /// where the model runs, PPER with a beam of [`Self::PPER_BEAM`], the
    /// quarantine's [`dv_align::DEFAULT_K`], edges trimmed at
    /// [`Self::TRIM_DB`], every utterance, no plots.
    pub fn new(features: impl Into<String>, checkpoint: impl Into<PathBuf>, out: impl Into<PathBuf>) -> AlignOptions {
        AlignOptions {
            features: features.into(),
            checkpoint: checkpoint.into(),
            out: out.into(),
            device: tch::Device::Cpu,
            batch: Self::BATCH,
            decoder: Decoder::Viterbi,
            viterbi: ViterbiOn::Auto,
            beam_width: Self::BEAM_WIDTH,
            pper_beam: Self::PPER_BEAM,
            quarantine_k: dv_align::DEFAULT_K,
            plots: Vec::new(),
            held_out: false,
            trim_db: Self::TRIM_DB,
        }
    }
}
