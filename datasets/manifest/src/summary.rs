//! What `dv corpus inspect` prints: size, speakers, rates, durations,
//! out-of-vocabulary rate, bad items.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use dv_corpus::{BadItem, BadReason, Utterance};
use dv_text::Lexicon;

/// One bar of the duration histogram: utterances with `lo <= d < hi` seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct DurationBin {
    pub lo: f64,
    pub hi: f64,
    pub count: usize,
}

/// Out-of-vocabulary words against a lexicon.
#[derive(Debug, Clone, PartialEq)]
pub struct OovReport {
    /// Word tokens in all normalized transcripts.
    pub tokens: usize,
    pub oov_tokens: usize,
    /// Distinct words.
    pub types: usize,
    pub oov_types: usize,
    /// The most frequent OOV words, most frequent first (ties by word).
    pub top: Vec<(String, usize)>,
}

impl OovReport {
    pub fn token_rate(&self) -> f64 {
        self.oov_tokens as f64 / self.tokens.max(1) as f64
    }
    pub fn type_rate(&self) -> f64 {
        self.oov_types as f64 / self.types.max(1) as f64
    }
}

/// A corpus in numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub utterances: usize,
    pub hours: f64,
    /// Utterances per speaker.
    pub speakers: BTreeMap<String, usize>,
    /// Utterances per sample rate (Hz).
    pub sample_rates: BTreeMap<u32, usize>,
    pub min_duration: f64,
    pub mean_duration: f64,
    pub max_duration: f64,
    pub histogram: Vec<DurationBin>,
    /// Utterances that carry reference phone labels / F0.
    pub with_phones: usize,
    pub with_f0: usize,
    /// `None` when no lexicon was given.
    pub oov: Option<OovReport>,
    /// Bad items per reason.
    pub bad: BTreeMap<BadReason, usize>,
}

const BIN_EDGES: [f64; 8] = [0.0, 1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 24.0];

impl Summary {
    /// Summarises utterances and bad items; with a lexicon, also the OOV rate.
    pub fn of(utts: &[Utterance], bad: &[BadItem], lexicon: Option<&Lexicon>) -> Summary {
        let mut speakers = BTreeMap::new();
        let mut sample_rates = BTreeMap::new();
        let mut total = 0.0;
        let (mut min, mut max) = (f64::INFINITY, 0.0f64);
        let mut histogram: Vec<DurationBin> = BIN_EDGES
            .iter()
            .enumerate()
            .map(|(i, &lo)| DurationBin { lo, hi: BIN_EDGES.get(i + 1).copied().unwrap_or(f64::INFINITY), count: 0 })
            .collect();
        for u in utts {
            *speakers.entry(u.speaker.clone()).or_insert(0) += 1;
            *sample_rates.entry(u.sample_rate).or_insert(0) += 1;
            total += u.duration;
            min = min.min(u.duration);
            max = max.max(u.duration);
            if let Some(b) = histogram.iter_mut().find(|b| u.duration >= b.lo && u.duration < b.hi) {
                b.count += 1;
            }
        }
        while histogram.len() > 1 && histogram.last().is_some_and(|b| b.count == 0) {
            histogram.pop();
        }
        let mut bad_counts = BTreeMap::new();
        for b in bad {
            *bad_counts.entry(b.reason).or_insert(0) += 1;
        }
        let n = utts.len();
        Summary {
            utterances: n,
            hours: total / 3600.0,
            speakers,
            sample_rates,
            min_duration: if n == 0 { 0.0 } else { min },
            mean_duration: if n == 0 { 0.0 } else { total / n as f64 },
            max_duration: max,
            histogram,
            with_phones: utts.iter().filter(|u| u.reference.as_ref().is_some_and(|r| !r.phones.is_empty())).count(),
            with_f0: utts.iter().filter(|u| u.reference.as_ref().is_some_and(|r| r.f0.is_some())).count(),
            oov: lexicon.map(|lex| oov(utts, lex)),
            bad: bad_counts,
        }
    }
}

fn oov(utts: &[Utterance], lex: &Lexicon) -> OovReport {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for u in utts {
        for w in u.normalized.split(|c: char| c.is_whitespace() || c == ',' || c == '.').filter(|w| !w.is_empty()) {
            *counts.entry(w).or_insert(0) += 1;
        }
    }
    let tokens = counts.values().sum();
    let mut missing: Vec<(String, usize)> =
        counts.iter().filter(|(w, _)| !lex.contains(w)).map(|(w, c)| (w.to_string(), *c)).collect();
    missing.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    OovReport {
        tokens,
        oov_tokens: missing.iter().map(|(_, c)| c).sum(),
        types: counts.len(),
        oov_types: missing.len(),
        top: missing.into_iter().take(10).collect(),
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "utterances     {}", self.utterances)?;
        writeln!(f, "audio          {:.3} h ({:.1} min)", self.hours, self.hours * 60.0)?;
        let top: Vec<String> = self.speakers.iter().take(8).map(|(s, n)| format!("{s} ({n})")).collect();
        let more =
            if self.speakers.len() > 8 { format!(", … {} more", self.speakers.len() - 8) } else { String::new() };
        writeln!(f, "speakers       {}: {}{more}", self.speakers.len(), top.join(", "))?;
        let rates: Vec<String> = self.sample_rates.iter().map(|(r, n)| format!("{r} Hz ({n})")).collect();
        writeln!(f, "sample rates   {}", rates.join(", "))?;
        writeln!(
            f,
            "duration       min {:.2} s, mean {:.2} s, max {:.2} s",
            self.min_duration, self.mean_duration, self.max_duration
        )?;
        let peak = self.histogram.iter().map(|b| b.count).max().unwrap_or(0).max(1);
        for b in &self.histogram {
            let hi = if b.hi.is_finite() { format!("{:>4.0}", b.hi) } else { "   …".into() };
            let bar = "#".repeat((b.count * 40).div_ceil(peak));
            writeln!(f, "  {:>4.0}–{} s {:>7} {bar}", b.lo, hi, b.count)?;
        }
        writeln!(f, "reference      {} with phone labels, {} with F0", self.with_phones, self.with_f0)?;
        match &self.oov {
            Some(o) => {
                writeln!(
                    f,
                    "OOV (CMUDict)  {:.2}% of {} word tokens, {:.2}% of {} word types",
                    100.0 * o.token_rate(),
                    o.tokens,
                    100.0 * o.type_rate(),
                    o.types
                )?;
                if !o.top.is_empty() {
                    let top: Vec<String> = o.top.iter().map(|(w, c)| format!("{w} ({c})")).collect();
                    writeln!(f, "  most frequent: {}", top.join(", "))?;
                }
            }
            None => writeln!(f, "OOV (CMUDict)  not computed (no lexicon)")?,
        }
        let bad_total: usize = self.bad.values().sum();
        writeln!(f, "bad items      {bad_total}")?;
        for (reason, n) in &self.bad {
            writeln!(f, "  {reason:<20} {n}")?;
        }
        Ok(())
    }
}
