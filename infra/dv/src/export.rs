//! `dv export`: a trained WaveNet checkpoint → a voice package
//! (`inference/voice/FORMAT.md`), a duration/F0 or G2P model added to one, or
//! a checkpoint's model weights alone. The arguments only: the work is
//! `dv_train::export`'s.

use std::path::PathBuf;

use anyhow::bail;
use clap::Args;
use dv_train::export::{add_duration, add_g2p, export_wavenet, model_only, WavenetExport, GOLDEN_FRAMES, GOLDEN_WORDS};

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A WaveNet checkpoint written by `dv train`.
    #[arg(long, required_unless_present = "voice", conflicts_with = "voice")]
    checkpoint: Option<PathBuf>,
    /// An existing voice package to add `--duration` and/or `--g2p` to (instead of `--checkpoint`).
    #[arg(long)]
    voice: Option<PathBuf>,
    /// A grapheme-to-phoneme checkpoint (§3.1) to include, for words missing from the lexicon.
    #[arg(long)]
    g2p: Option<PathBuf>,
    /// Write `--checkpoint`'s model weights alone (no optimizer state; any model kind) to this
    /// file and stop: a checkpoint small enough to ship, still readable by `dv export` and `dv evaluate`.
    #[arg(long, requires = "checkpoint")]
    model_only: Option<PathBuf>,
    /// With `--model-only`: more checkpoints of the same model, whose weights are averaged
    /// element-wise with `--checkpoint`'s (checkpoint averaging, as ESPnet and fairseq do).
    #[arg(long, num_args = 1.., requires = "model_only")]
    average: Vec<PathBuf>,
    /// Store the weights in half precision (IEEE binary16), half the bytes. With
    /// `--model-only`: `dv export`, `dv evaluate` and `dv train` read them back as float32.
    /// With `--checkpoint … --out VOICE`: every WaveNet and duration/F0 weight is rounded to
    /// binary16 before the golden outputs are computed, so the package (FORMAT.md) stores
    /// exactly the weights its goldens were made with.
    #[arg(long)]
    half: bool,
    /// Words decoded into the package's G2P golden outputs (from the run's test split).
    #[arg(long, default_value_t = GOLDEN_WORDS)]
    golden_words: usize,
    /// The featurize output the run trained on (default: the run config's `[data] url`).
    #[arg(long)]
    features: Option<String>,
    /// The voice package directory to write.
    #[arg(long, required_unless_present = "model_only")]
    out: Option<PathBuf>,
    /// A duration/F0 model checkpoint (§3.3) to include, so that the voice speaks text.
    #[arg(long)]
    duration: Option<PathBuf>,
    /// Conditioning frames in the golden example (64 samples each).
    #[arg(long, default_value_t = GOLDEN_FRAMES)]
    golden_frames: usize,
}

pub(crate) fn run(a: ExportArgs) -> anyhow::Result<()> {
    if let (Some(c), Some(out)) = (&a.checkpoint, &a.model_only) {
        let checkpoints: Vec<PathBuf> = std::iter::once(c).chain(&a.average).cloned().collect();
        println!("{}", model_only(&checkpoints, a.half, out)?);
        return Ok(());
    }
    let Some(out) = a.out.clone() else { bail!("give --out") };
    if let Some(v) = &a.voice {
        if a.duration.is_none() && a.g2p.is_none() {
            bail!("--voice needs --duration and/or --g2p to add");
        }
        if a.half {
            bail!("--half rounds a checkpoint's weights before its goldens are made: give it with --checkpoint, not --voice");
        }
        let mut from = v.clone();
        if let Some(d) = &a.duration {
            println!("{}", add_duration(&from, d, a.features.as_deref(), &out)?);
            from = out.clone();
        }
        if let Some(g) = &a.g2p {
            println!("{}", add_g2p(&from, g, a.golden_words, &out)?);
        }
        return Ok(());
    }
    let Some(checkpoint) = a.checkpoint.clone() else { bail!("give --checkpoint (or --voice with --duration)") };
    let exported = export_wavenet(&WavenetExport {
        checkpoint,
        out: out.clone(),
        features: a.features.clone(),
        duration: a.duration.clone(),
        half: a.half,
        golden_frames: a.golden_frames,
        created: crate::utc_now(),
    })?;
    if let Some((p, step)) = &exported.duration {
        println!("included the duration/F0 model of {} (step {step})", p.display());
    }
    if let Some(g) = &a.g2p {
        println!("{}", add_g2p(&out, g, a.golden_words, &out)?);
    }
    println!("{exported}");
    Ok(())
}
