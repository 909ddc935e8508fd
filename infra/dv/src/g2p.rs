//! `dv g2p`: pronunciations of words, as the text front end finds them: the
//! lexicon first, then the voice package's grapheme-to-phoneme model (§3.1,
//! beam search), both printed when asked (`--both`).

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use dv_synth::G2p;
use dv_voice::Voice;

#[derive(Args, Debug)]
pub struct G2pArgs {
    /// Words to pronounce; one the model cannot read as typed (`café`, `3rd`) is read as the
    /// text front end reads it (`cafe`, `third`).
    #[arg(required = true)]
    words: Vec<String>,
    /// A voice package with a G2P model (`dv export --g2p`): a name (`dv voices`) or a
    /// directory; default: the default voice (the shipped one).
    #[arg(long)]
    voice: Option<String>,
    /// Print the model's pronunciation even for words in the lexicon.
    #[arg(long)]
    both: bool,
    /// Beam width (default: the package's, 5).
    #[arg(long)]
    beam: Option<usize>,
    /// The pronunciation lexicon (default: $DV_CMUDICT, else the CMUDict built into dv).
    #[arg(long)]
    cmudict: Option<PathBuf>,
}

pub(crate) fn run(a: G2pArgs) -> anyhow::Result<()> {
    let dir = crate::voices::resolve(a.voice.as_deref())?;
    let voice = Voice::read(&dir).with_context(|| format!("reading the voice package {}", dir.display()))?;
    let g2p = G2p::new(&voice)?;
    let (_, lex) = crate::text::load_lexicon(a.cmudict)?;
    let width = a.beam.unwrap_or(g2p.config().beam);
    let mut words = Vec::new();
    for raw in &a.words {
        let w = raw.to_lowercase();
        if w.chars().all(|c| c.is_ascii_lowercase() || "'-.".contains(c)) {
            words.push(w);
            continue;
        }
        let read: Vec<String> = dv_text::normalize(raw).words().map(str::to_string).collect();
        if read.is_empty() {
            bail!("{raw:?}: no word in it that the text front end reads");
        }
        eprintln!("{raw:?} read as {:?}", read.join(" "));
        words.extend(read);
    }
    for w in words {
        let known = lex.get(&w).and_then(|p| p.first());
        if let Some(p) = known {
            println!("{w}\tlexicon\t{}", p.iter().map(ToString::to_string).collect::<Vec<_>>().join(" "));
        }
        if known.is_none() || a.both {
            let (pairs, score) = g2p.beam(&w, width)?;
            let ph: Vec<String> = pairs
                .iter()
                .map(|&(p, s)| dv_speak::stressed(p, s).map_or_else(|| format!("?{p}/{s}"), |x| x.to_string()))
                .collect();
            println!("{w}\tg2p\t{}\t(log-probability {score:.3}, beam {width})", ph.join(" "));
        }
    }
    Ok(())
}
