//! `dv`: the deepvoice-rs command line. Each subcommand is a verb a user
//! types; see `dv --help`.

#![forbid(unsafe_code)]

mod align;
mod corpus;
mod device;
mod doctor;
mod evaluate;
mod export;
mod featurize;
mod g2p;
mod plot;
mod recipe;
mod serve;
mod synth;
mod text;
mod train;
mod voices;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Deep Voice, retrained on your voice corpus.
#[derive(Parser)]
#[command(name = "dv", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// What this machine offers a run: libtorch, CUDA, cuDNN, NCCL, NVRTC, SIMD, recipe tools.
    Doctor,
    /// Read, check and generate voice corpora.
    #[command(subcommand)]
    Corpus(corpus::CorpusCommand),
    /// Featurize a corpus: mu-law audio, MFCCs, F0 and chunks, as sharded Parquet on a disk or object store.
    Featurize(featurize::FeaturizeArgs),
    /// The text front end: normalization and pronunciation lookup.
    #[command(subcommand)]
    Text(text::TextCommand),
    /// Train a model from a TOML run config: data-parallel ranks, checkpoints, exact resume, MLflow.
    Train(train::TrainArgs),
    /// Phoneme boundaries for a featurized corpus from a trained segmentation model: Parquet, TextGrids, confidence, quarantine.
    Align(align::AlignArgs),
    /// Pronounce words: the lexicon, then a voice package's grapheme-to-phoneme model (beam search).
    G2p(g2p::G2pArgs),
    /// Held-out accuracy: duration/F0 model (ms, Hz, voicing) or G2P model (PER, WER with beam search).
    Evaluate(evaluate::EvaluateArgs),
    /// Write a trained WaveNet checkpoint as a voice package (safetensors + JSON + golden outputs) for inference.
    Export(export::ExportArgs),
    /// Speak with a voice package on the CPU (no libtorch): conditioning network + WaveNet sampler → 16-bit WAV.
    Synth(synth::SynthArgs),
    /// Draw training curves (loss, validation loss, any logged metric) from a JSONL file to PNG.
    Plot(plot::PlotArgs),
    /// The voice packages found by name (DV_VOICES, $DV_HOME/voices, the shipped ones) and the default.
    Voices,
    /// Retrain a voice on a corpus, stage by stage, content-addressed and resumable (a recipe TOML).
    #[command(subcommand)]
    Recipe(recipe::RecipeCommand),
    /// The speech server (OpenAI-compatible HTTP, streaming): runs the dv-serve binary next to dv with these arguments.
    Serve(serve::ServeArgs),
}

/// The verbs that never call libtorch: they start without its CUDA
/// libraries.
const WITHOUT_LIBTORCH: [&str; 5] = ["synth", "voices", "text", "g2p", "serve"];

/// Whether the command `verb` (the first argument) may call libtorch: then
/// `main` loads libtorch's CUDA backend ([`dv_torch::load_cuda`]) before
/// anything calls libtorch. `dv` does not link it (`build.rs` says why), so
/// the text-to-speech verbs start without the CUDA libraries.
fn runs_libtorch(verb: Option<&std::ffi::OsStr>) -> bool {
    !verb.and_then(|v| v.to_str()).is_some_and(|v| WITHOUT_LIBTORCH.contains(&v))
}

/// Writes `bytes` to `path` atomically ([`dv_util::write_atomic`]), so a
/// killed `dv` never leaves a half-written output.
pub(crate) fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    Ok(dv_util::write_atomic(path, bytes)?)
}

/// The current time as an RFC 3339 UTC timestamp (`2026-11-23T02:00:00Z`).
pub(crate) fn utc_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Where dv keeps corpora and caches: `$DV_HOME`, else `~/.cache/deepvoice-rs`.
pub(crate) fn dv_home() -> PathBuf {
    if let Some(h) = std::env::var_os("DV_HOME") {
        return PathBuf::from(h);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".cache/deepvoice-rs")
}

/// A reader that stops early (`dv … | head`) closes the pipe: the next
/// print fails with EPIPE and Rust's `println!` panics. Exit quietly with
/// the status a shell gives a program killed by SIGPIPE (128 + 13) instead.
fn quiet_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let p = info.payload();
        let msg = p.downcast_ref::<String>().map(String::as_str).or_else(|| p.downcast_ref::<&str>().copied());
        if msg.is_some_and(|m| m.starts_with("failed printing to stdout") && m.contains("Broken pipe")) {
            std::process::exit(141);
        }
        default(info)
    }));
}

fn main() -> anyhow::Result<()> {
    quiet_on_broken_pipe();
    // Before clap: parsing `--device cuda` asks libtorch about CUDA.
    if runs_libtorch(std::env::args_os().nth(1).as_deref()) {
        anyhow::Context::context(dv_torch::load_cuda(), "loading libtorch's CUDA backend")?;
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Doctor => doctor::run(),
        Command::Corpus(c) => corpus::run(c),
        Command::Featurize(a) => featurize::run_cli(a),
        Command::Text(c) => text::run(c),
        Command::Voices => voices::run(),
        Command::Train(a) => train::run(a),
        Command::Plot(a) => plot::run(a),
        Command::Align(a) => align::run(a),
        Command::Export(a) => export::run(a),
        Command::Evaluate(a) => evaluate::run(a),
        Command::G2p(a) => g2p::run(a),
        Command::Synth(a) => synth::run(a),
        Command::Recipe(c) => recipe::run(c),
        Command::Serve(a) => serve::run(a),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_verbs_without_libtorch_are_verbs_and_every_other_loads_it() {
        let cli = Cli::command();
        for verb in WITHOUT_LIBTORCH {
            assert!(cli.find_subcommand(verb).is_some(), "{verb} is no dv verb");
            assert!(!runs_libtorch(Some(verb.as_ref())), "{verb}");
        }
        for verb in ["train", "align", "evaluate", "export", "doctor", "recipe", "featurize"] {
            assert!(cli.find_subcommand(verb).is_some(), "{verb} is no dv verb");
            assert!(runs_libtorch(Some(verb.as_ref())), "{verb}");
        }
        assert!(runs_libtorch(None), "dv alone (its help) loads it too");
    }
}
