//! `dv evaluate`: held-out accuracy of a trained duration/F0 model (§3.3) in
//! the paper's terms: mean absolute duration error per phoneme (ms), mean
//! absolute F0 error over the points the reference has voiced (Hz), and
//! voicing accuracy, on the validation utterances of the run's split.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use dv_train::checkpoint::decode;
use dv_train::{DataConfig, Prosody, RunConfig};

#[derive(Args, Debug)]
pub struct EvaluateArgs {
    /// A duration/F0 checkpoint written by `dv train`.
    #[arg(long)]
    checkpoint: PathBuf,
    /// The featurize output (default: the run config's `[data] url`).
    #[arg(long)]
    features: Option<String>,
    /// Evaluate the training utterances instead of the held-out ones.
    #[arg(long)]
    train_split: bool,
}

pub(crate) fn run(a: EvaluateArgs) -> anyhow::Result<()> {
    let name = a.checkpoint.display().to_string();
    let bytes = std::fs::read(&a.checkpoint).with_context(|| format!("reading {name}"))?;
    let cfg = RunConfig::from_toml(&format!("{name} (its run config)"), &decode(&name, &bytes)?.state.config)?;
    let DataConfig::Prosody(mut data) = cfg.data.clone() else {
        anyhow::bail!("{name}: not a duration/F0 run ([data] kind = \"prosody\")");
    };
    if let Some(f) = a.features {
        data.url = f;
    }
    let (model, step) = crate::export::load_duration(&a.checkpoint)?;
    let split = Prosody::load(&data, model.config.f0_points as usize)?;
    let set = if a.train_split { &split.train } else { &split.validation };
    let m = dv_train::prosody::evaluate(&model, set)?;
    println!(
        "{} utterances ({} phonemes, {} split) at step {step}: duration MAE {:.1} ms, F0 MAE {:.1} Hz (voiced reference points), voicing accuracy {:.1}%",
        m.utterances,
        m.phonemes,
        if a.train_split { "training" } else { "held-out" },
        m.duration_mae_ms,
        m.f0_mae_hz,
        100.0 * m.voicing_accuracy
    );
    println!("{}", serde_json::to_string(&m)?);
    Ok(())
}
