//! `dv align`: phoneme boundaries for a featurized corpus from a trained
//! segmentation model (Deep Voice §3.2). The pipeline and what it writes
//! under `--out` are [`dv_train::alignment`]'s; this verb parses its flags,
//! calls [`dv_train::alignment::align`] with its progress on stderr and
//! prints the report's [`summary`](dv_train::alignment::AlignReport::summary),
//! as the recipe's align stage does.

use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, ValueEnum};
use dv_train::alignment::{self, AlignOptions};

use crate::device::DeviceArg;

/// `--decoder`: where the boundaries come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Decoder {
    /// CTC Viterbi over each utterance's known pair sequence.
    Viterbi,
    /// §3.2's beam search over chained pairs.
    Beam,
}

/// `--viterbi`: where the Viterbi decoder runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ViterbiOn {
    Cpu,
    Cuda,
    /// cuda when `--device` is a GPU.
    Auto,
}

#[derive(Args)]
pub(crate) struct AlignArgs {
    /// A `dv featurize --out` directory whose shards carry the phones to align (`ref_phones`).
    #[arg(long)]
    features: String,
    /// A segmentation checkpoint written by `dv train` (`step-….safetensors` or `best.safetensors`).
    #[arg(long)]
    checkpoint: PathBuf,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// `cpu`, `cuda` or `cuda:N` for the model's forward pass.
    #[arg(long, default_value = "cpu")]
    device: DeviceArg,
    /// Utterances per forward pass.
    #[arg(long, default_value_t = AlignOptions::BATCH)]
    batch: usize,
    /// Boundaries from `viterbi` (exact, over each utterance's known pair sequence) or `beam`
    /// (§3.2's decoder: a beam search over chained pairs, no transcript needed).
    #[arg(long, value_enum, default_value_t = Decoder::Viterbi)]
    decoder: Decoder,
    /// Where `--decoder viterbi` runs: `cpu`, `cuda` (dv-align's CUDA kernel, a batch per
    /// launch, bit-identical paths) or `auto` (cuda when `--device` is a GPU).
    #[arg(long, value_enum, default_value_t = ViterbiOn::Auto)]
    viterbi: ViterbiOn,
    /// Beam width of `--decoder beam` (§3.2: 50).
    #[arg(long, default_value_t = AlignOptions::BEAM_WIDTH)]
    beam_width: usize,
    /// Beam width of the CTC prefix beam search that measures the phoneme-pair error rate (PPER,
    /// §3.2) against each utterance's reference pairs; 0 skips it.
    #[arg(long, default_value_t = AlignOptions::PPER_BEAM)]
    pper_beam: usize,
    /// Quarantine utterances whose confidence is below median − k × 1.4826 × MAD, the
    /// segmentation model's training utterances and those its run held out each against their
    /// own median and MAD.
    #[arg(long, default_value_t = dv_align::DEFAULT_K)]
    quarantine_k: f64,
    /// Draw this utterance's log-mel spectrogram with the predicted (and reference) boundaries
    /// to `<out>/plots/<ID>.png`; repeat for more.
    #[arg(long = "plot", value_name = "ID")]
    plots: Vec<String>,
    /// Align only the utterances the checkpoint's training run held out for validation (its
    /// `[data] validation_fraction` and `seed`), to measure the aligner on unseen audio.
    #[arg(long)]
    held_out: bool,
    /// The pauses at the ends of an utterance end where speech starts and stops: the first and
    /// last frames within this many dB of the loudest (as `librosa.effects.trim`; Coqui TTS's
    /// default `trim_db`). CTC does not tie the first and last pairs to a moment, so the model's
    /// own boundaries there are not used when they fall inside the pause, and (Viterbi) every other pair is
    /// decoded inside speech (a model trained on little data squeezes the first few phonemes into
    /// the leading pause otherwise). 0 keeps the model's.
    #[arg(long, default_value_t = AlignOptions::TRIM_DB)]
    trim_db: f64,
}

impl AlignArgs {
    fn options(self) -> anyhow::Result<AlignOptions> {
        Ok(AlignOptions {
            device: self.device.into(),
            batch: self.batch,
            decoder: match self.decoder {
                Decoder::Viterbi => alignment::Decoder::Viterbi,
                Decoder::Beam => alignment::Decoder::Beam,
            },
            viterbi: match self.viterbi {
                ViterbiOn::Cpu => alignment::ViterbiOn::Cpu,
                ViterbiOn::Cuda => alignment::ViterbiOn::Cuda,
                ViterbiOn::Auto => alignment::ViterbiOn::Auto,
            },
            beam_width: self.beam_width,
            pper_beam: self.pper_beam,
            quarantine_k: self.quarantine_k,
            plots: self.plots,
            held_out: self.held_out,
            trim_db: self.trim_db,
            ..AlignOptions::new(self.features, self.checkpoint, self.out)
        })
    }
}

pub(crate) fn run(a: AlignArgs) -> anyhow::Result<()> {
    let o = a.options()?;
    let started = Instant::now();
    let r = alignment::align(&o, &mut |line: &str| eprintln!("{line}"))?;
    println!("{}", r.summary(&o));
    println!("output         {} ({:.1} s)", o.out.display(), started.elapsed().as_secs_f64());
    Ok(())
}
