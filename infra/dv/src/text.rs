//! `dv text`: normalization, lexicon lookup, CMUDict statistics.

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use dv_text::{normalize, Lexicon, LexiconSource};

#[derive(Subcommand)]
pub(crate) enum TextCommand {
    /// Print the normalized form of each argument (or of each stdin line).
    Normalize { text: Vec<String> },
    /// Print each word's CMUDict pronunciation; words CMUDict lacks are listed as OOV.
    Phonemes {
        text: Vec<String>,
        /// A CMUDict-format file (default: $DV_CMUDICT, else the CMUDict built into dv).
        #[arg(long)]
        cmudict: Option<PathBuf>,
    },
    /// CMUDict counts and the G2P filter of Deep Voice §4.2.
    LexiconStats {
        /// A CMUDict-format file (default: $DV_CMUDICT, else the CMUDict built into dv).
        #[arg(long)]
        cmudict: Option<PathBuf>,
    },
}

fn inputs(args: Vec<String>) -> anyhow::Result<Vec<String>> {
    if !args.is_empty() {
        return Ok(vec![args.join(" ")]);
    }
    std::io::stdin().lines().collect::<Result<_, _>>().context("reading stdin")
}

/// The lexicon `path` names, else CMUDict (`$DV_CMUDICT`, else built in),
/// with where it came from.
pub(crate) fn load_lexicon(path: Option<PathBuf>) -> anyhow::Result<(LexiconSource, Lexicon)> {
    let source = LexiconSource::file_or_cmudict(path)?;
    let lex = source.load()?;
    Ok((source, lex))
}

pub(crate) fn run(cmd: TextCommand) -> anyhow::Result<()> {
    match cmd {
        TextCommand::Normalize { text } => {
            for line in inputs(text)? {
                println!("{}", normalize(&line).text());
            }
        }
        TextCommand::Phonemes { text, cmudict } => {
            let (_, lex) = load_lexicon(cmudict)?;
            for line in inputs(text)? {
                let lookup = lex.lookup(&normalize(&line));
                for (word, pron) in &lookup.words {
                    match pron {
                        Some(p) => {
                            let ph: Vec<String> = p.iter().map(ToString::to_string).collect();
                            println!("{word}\t{}", ph.join(" "));
                        }
                        None => println!("{word}\t<OOV>"),
                    }
                }
                let oov: Vec<&str> = lookup.oov().collect();
                if !oov.is_empty() {
                    eprintln!("{} OOV word(s): {}", oov.len(), oov.join(" "));
                }
            }
        }
        TextCommand::LexiconStats { cmudict } => {
            let (source, lex) = load_lexicon(cmudict)?;
            let s = lex.g2p_filter_stats();
            println!("lexicon                  {source}");
            println!("grapheme-phoneme pairs   {}", s.pairs);
            println!("distinct words           {}", s.words);
            println!(
                "G2P filter (§4.2) keeps  {} words ({:.1}% of pairs); the paper kept 124,978 of 133,854",
                s.kept,
                100.0 * s.kept as f64 / s.pairs as f64
            );
            println!("  dropped, not starting with a letter  {}", s.not_letter_start);
            println!("  dropped, containing a digit          {}", s.with_digit);
            println!("  dropped, several pronunciations      {}", s.multiple_pronunciations);
        }
    }
    Ok(())
}
