//! `dv corpus`: read any supported corpus into a manifest, and generate the
//! embedded default corpus.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;
use dv_corpus::embedded::{self, Request, Tools};
use dv_corpus::CorpusKind;
use dv_manifest::{bad_items_frame, utterances_frame, write_parquet, Summary};

#[derive(Subcommand)]
pub(crate) enum CorpusCommand {
    /// Read a corpus (directory, file:// URL or .tsv/.csv), write its manifest as Parquet, print a summary.
    Inspect {
        /// Corpus directory, file:// URL, or .tsv/.csv manifest.
        location: String,
        /// Layout, when detection should be overridden: ljspeech, arctic, blizzard2013, vctk, table.
        #[arg(long)]
        format: Option<CorpusKind>,
        /// Where to write the manifest (default: manifest.parquet in the current directory).
        #[arg(long, default_value = "manifest.parquet")]
        manifest: PathBuf,
        /// Where to write the bad-item report (default: next to the manifest, `<name>.bad.parquet`).
        #[arg(long)]
        bad: Option<PathBuf>,
        /// CMUDict file for the OOV rate (default: $DV_CMUDICT, else the CMUDict built into dv).
        #[arg(long)]
        cmudict: Option<PathBuf>,
        /// How many bad items to list by name.
        #[arg(long, default_value_t = 20)]
        show_bad: usize,
    },
    /// Generate the embedded default corpus (festival + hts_engine slt voice, exact labels and F0).
    MakeDefault {
        /// Output directory (default: $DV_HOME/corpora/cmu_us_slt_fortunes_<N>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Utterances to render (300 ≈ 18 min; at most 7,982 ≈ 8.15 h).
        #[arg(long, default_value_t = embedded::DEFAULT_UTTERANCES)]
        utterances: usize,
        /// Seed of the fixed sentence shuffle.
        #[arg(long, default_value_t = embedded::DEFAULT_SEED)]
        seed: u64,
        /// Parallel renderers (default: all cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Only run festival's text analysis: leave `<out>.partial` with the
        /// HTS labels, to render on another machine (which then needs only
        /// hts_engine, sox and the voice).
        #[arg(long)]
        labels_only: bool,
        /// hts_engine binary (default: Debian's).
        #[arg(long)]
        hts_engine: Option<PathBuf>,
        /// sox binary (default: Debian's).
        #[arg(long)]
        sox: Option<PathBuf>,
        /// The slt `.htsvoice` (default: Debian's festvox-us-slt-hts).
        #[arg(long)]
        voice: Option<PathBuf>,
    },
}

pub(crate) fn run(cmd: CorpusCommand) -> anyhow::Result<()> {
    match cmd {
        CorpusCommand::Inspect { location, format, manifest, bad, cmudict, show_bad } => {
            inspect(&location, format, &manifest, bad, cmudict, show_bad)
        }
        CorpusCommand::MakeDefault { out, utterances, seed, jobs, labels_only, hts_engine, sox, voice } => {
            let out = out.unwrap_or_else(|| crate::dv_home().join(format!("corpora/cmu_us_slt_fortunes_{utterances}")));
            let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
            let d = Tools::default();
            let tools = Tools {
                hts_engine: hts_engine.unwrap_or(d.hts_engine.clone()),
                sox: sox.unwrap_or(d.sox.clone()),
                voice: voice.unwrap_or(d.voice.clone()),
                ..d
            };
            let req = Request { out, utterances, seed, jobs, labels_only, tools };
            let tty = std::io::stderr().is_terminal();
            let started = std::time::Instant::now();
            let mut last = started;
            let mut progress = |done: usize, total: usize| {
                let every = if tty { 0.5 } else { 10.0 };
                if done == total || last.elapsed().as_secs_f64() >= every {
                    last = std::time::Instant::now();
                    let secs = started.elapsed().as_secs_f64();
                    let eta = if done > 0 { secs / done as f64 * (total - done) as f64 } else { 0.0 };
                    let msg = format!("rendering {done}/{total} utterances, {secs:.0} s, ETA {eta:.0} s");
                    if tty {
                        eprint!("\r{msg}");
                        let _ = std::io::stderr().flush();
                    } else {
                        eprintln!("{msg}");
                    }
                }
            };
            let report = embedded::make(&req, &mut progress)?;
            if tty {
                eprintln!();
            }
            if let Some(labels) = &report.labels {
                println!(
                    "labels for {} utterances in {} ({:.1} s); run again without --labels-only to render them",
                    report.utterances,
                    labels.display(),
                    report.elapsed_seconds
                );
            } else if report.reused {
                println!(
                    "corpus {} is up to date ({} utterances, {:.1} min of audio)",
                    report.out.display(),
                    report.utterances,
                    report.audio_seconds / 60.0
                );
            } else {
                let available = match report.sentences_available {
                    0 => " from labels made earlier".to_string(),
                    n => format!(" ({n} plain sentences available)"),
                };
                println!(
                    "corpus {}: {} utterances{available}, {:.1} min of audio, made in {:.1} s",
                    report.out.display(),
                    report.utterances,
                    report.audio_seconds / 60.0,
                    report.elapsed_seconds
                );
            }
            Ok(())
        }
    }
}

fn inspect(
    location: &str,
    format: Option<CorpusKind>,
    manifest: &Path,
    bad: Option<PathBuf>,
    cmudict: Option<PathBuf>,
    show_bad: usize,
) -> anyhow::Result<()> {
    let corpus = dv_corpus::read(location, format)?;
    let lexicon = match crate::text::load_lexicon(cmudict) {
        Ok((_, lex)) => Some(lex),
        Err(e) => {
            eprintln!("warning: no OOV rate: {e}");
            None
        }
    };
    let mut df = utterances_frame(&corpus.utterances)?;
    write_parquet(&mut df, manifest).with_context(|| format!("writing {}", manifest.display()))?;
    let bad_path = bad.unwrap_or_else(|| manifest.with_extension("bad.parquet"));
    let mut bad_df = bad_items_frame(&corpus.bad)?;
    write_parquet(&mut bad_df, &bad_path).with_context(|| format!("writing {}", bad_path.display()))?;

    println!("corpus         {} ({})", corpus.root.display(), corpus.kind);
    print!("{}", Summary::of(&corpus.utterances, &corpus.bad, lexicon.as_ref()));
    for b in corpus.bad.iter().take(show_bad) {
        println!("  {} {} [{}]: {}", b.item, b.file.display(), b.reason, b.detail);
    }
    if corpus.bad.len() > show_bad {
        println!("  … {} more in {}", corpus.bad.len() - show_bad, bad_path.display());
    }
    println!("manifest       {} ({} rows)", manifest.display(), df.height());
    println!("bad items      {} ({} rows)", bad_path.display(), bad_df.height());
    Ok(())
}
