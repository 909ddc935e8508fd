//! G2P training data (Deep Voice §3.1, §4.2): CMUDict's words kept by the
//! §4.2 filter (starting with a letter, no digits, one pronunciation), with
//! stress, split by a hash of the word into train / dev / test so that the
//! split never changes with the dictionary's order and a test word is never
//! trained on: `splitmix64(seed ^ fnv1a64(word)) / 2^64` below `test` is
//! test, below `test + dev` is dev, the rest trains. Words with a letter
//! outside [`crate::models::g2p::GRAPHEMES`] are skipped and counted.
//!
//! Metrics ([`G2pMetrics`]): phoneme error rate = total edit distance
//! between decoded and reference token sequences (phoneme with stress) over
//! total reference tokens; word error rate = share of words with any
//! difference. The paper (§4.2): 5.8% PER, 28.7% WER. The same two rates
//! with stress ignored (each token mapped to its phoneme on both sides) are
//! reported beside them (`per_no_stress`, `wer_no_stress`), for comparison
//! with results on CMUDict without stress.

use dv_torch::tch::{Device, Tensor};
use serde::Serialize;

use super::dataset::Dataset;
use super::sampler::splitmix64;
use crate::models::g2p::{encode_word, token, G2p, EOS};
use crate::models::model::Batch;
use crate::TrainError;

// Defined in dv-config with the run config, which parses them without libtorch.
pub use dv_config::LexiconConfig;

/// Which part of the split a word is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Train,
    Dev,
    Test,
}

/// The split of `word` (module docs).
pub fn part_of(word: &str, c: &LexiconConfig) -> Part {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in word.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    let u = splitmix64(c.seed ^ h) as f64 / 18_446_744_073_709_551_616.0;
    if u < c.test_fraction {
        Part::Test
    } else if u < c.test_fraction + c.dev_fraction {
        Part::Dev
    } else {
        Part::Train
    }
}

/// Words with their letter indices and output tokens.
#[derive(Debug, Clone, Default)]
pub struct Pronunciations {
    pub words: Vec<String>,
    pub letters: Vec<Vec<i64>>,
    pub tokens: Vec<Vec<i64>>,
}

pub struct LexiconSplit {
    pub train: Pronunciations,
    pub dev: Pronunciations,
    pub test: Pronunciations,
    /// Words skipped for a letter outside the grapheme set.
    pub skipped: usize,
}

impl Pronunciations {
    pub fn load(c: &LexiconConfig) -> Result<LexiconSplit, TrainError> {
        let path = match &c.cmudict {
            Some(p) => p.clone(),
            None => dv_text::locate_cmudict()
                .map_err(|e| TrainError::Config { path: "[data] cmudict".into(), reason: e.to_string() })?,
        };
        let lex = dv_text::Lexicon::load(&path)
            .map_err(|e| TrainError::Features { path: path.display().to_string(), reason: e.to_string() })?;
        let (mut train, mut dev, mut test) = (Self::default(), Self::default(), Self::default());
        let mut skipped = 0;
        for (w, pron) in lex.g2p_pairs() {
            let Ok(letters) = encode_word(w) else {
                skipped += 1;
                continue;
            };
            let mut tokens: Vec<i64> = pron.iter().map(|p| token(p.phoneme.index(), p.stress.index())).collect();
            if c.reverse {
                tokens.reverse();
            }
            let set = match part_of(w, c) {
                Part::Train => &mut train,
                Part::Dev => &mut dev,
                Part::Test => &mut test,
            };
            set.words.push(w.to_string());
            set.letters.push(letters);
            set.tokens.push(tokens);
        }
        Ok(LexiconSplit { train, dev, test, skipped })
    }
}

impl Dataset for Pronunciations {
    fn len(&self) -> usize {
        self.words.len()
    }

    fn length(&self, index: usize) -> usize {
        self.letters.get(index).map_or(0, Vec::len)
    }

    /// # Shapes
    /// `inputs` `[b, n_max]` int64, `targets` `[b, T_max + 1]` int64 (EOS,
    /// then −100).
    fn batch(&self, indices: &[usize], device: Device) -> Result<Batch, TrainError> {
        let b = indices.len();
        let n = indices.iter().map(|&i| self.letters[i].len()).max().unwrap_or(1).max(1);
        let t = indices.iter().map(|&i| self.tokens[i].len()).max().unwrap_or(0) + 1;
        let mut x = vec![0i64; b * n];
        let mut y = vec![-100i64; b * t];
        for (k, &i) in indices.iter().enumerate() {
            x[k * n..k * n + self.letters[i].len()].copy_from_slice(&self.letters[i]);
            let toks = &self.tokens[i];
            y[k * t..k * t + toks.len()].copy_from_slice(toks);
            y[k * t + toks.len()] = EOS;
        }
        Ok(Batch {
            inputs: Tensor::from_slice(&x).f_view([b as i64, n as i64])?.f_to_device(device)?,
            input_lengths: indices.iter().map(|&i| self.letters[i].len() as i64).collect(),
            targets: Tensor::from_slice(&y).f_view([b as i64, t as i64])?.f_to_device(device)?,
            target_lengths: indices.iter().map(|&i| self.tokens[i].len() as i64 + 1).collect(),
            example_ids: indices.to_vec(),
            audio_seconds: None,
        })
    }
}

pub use dv_align::edit_distance;

/// Phoneme and word error rates (module docs).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct G2pMetrics {
    pub per: f64,
    pub wer: f64,
    /// PER and WER with stress ignored (module docs).
    pub per_no_stress: f64,
    pub wer_no_stress: f64,
    pub words: usize,
    pub beam: usize,
    /// Mean summed log-probability of the decoded hypotheses.
    pub mean_score: f64,
}

/// One decoded word: the hypothesis tokens (without EOS) and their score.
pub type Decoded = (Vec<i64>, f64);

/// Decodes up to `limit` words of `data` with beam `width`; more than one
/// model decode as an ensemble ([`crate::models::g2p::beam_ensemble`]).
pub fn decode(models: &[&G2p], data: &Pronunciations, width: usize, limit: usize) -> Result<Vec<Decoded>, TrainError> {
    Ok(decode_with_progress(models, data, width, limit, None, |_, _| {})?.swap_remove(0))
}

/// Right-to-left models ([`LexiconConfig::reverse`]) that rescore each
/// word's n-best list, and the weights of their score to try.
pub type Rescore<'a> = (&'a [&'a G2p], &'a [f64]);

/// [`decode`], calling `progress(done, total)` after every word. Without
/// `rescore` the result holds one decoding; with it, one per weight: each
/// word's n-best list ([`crate::models::g2p::beam_ensemble_nbest`]) is
/// decoded and scored by the right-to-left models once, then reordered for
/// each weight ([`crate::models::g2p::rescore_weights`]).
pub fn decode_with_progress(
    models: &[&G2p],
    data: &Pronunciations,
    width: usize,
    limit: usize,
    rescore: Option<Rescore<'_>>,
    mut progress: impl FnMut(usize, usize),
) -> Result<Vec<Vec<Decoded>>, TrainError> {
    let n = data.len().min(limit);
    let ways = rescore.map_or(1, |(_, w)| w.len());
    let mut out = vec![Vec::with_capacity(n); ways];
    for i in 0..n {
        let d = match rescore {
            None => vec![crate::models::g2p::beam_ensemble(models, &data.letters[i], width)?],
            Some((r2l, weights)) => {
                let nbest = crate::models::g2p::beam_ensemble_nbest(models, &data.letters[i], width, width)?;
                crate::models::g2p::rescore_weights(&nbest, r2l, &data.letters[i], weights)?
            }
        };
        for (o, d) in out.iter_mut().zip(d) {
            o.push(d);
        }
        progress(i + 1, n);
    }
    Ok(out)
}

/// A token's phoneme, stress dropped (tokens are `1 + phoneme · 5 + stress`).
pub fn phonemes(tokens: &[i64]) -> Vec<i64> {
    tokens.iter().map(|&k| crate::models::g2p::untoken(k).0 as i64).collect()
}

/// PER/WER (module docs) of `decoded`, the first `decoded.len()` words of `data`.
pub fn score(decoded: &[Decoded], data: &Pronunciations, width: usize) -> G2pMetrics {
    let (mut edits, mut refs, mut wrong, mut score) = (0usize, 0usize, 0usize, 0.0);
    let (mut edits_ns, mut wrong_ns) = (0usize, 0usize);
    for ((hyp, s), reference) in decoded.iter().zip(&data.tokens) {
        let e = edit_distance(hyp, reference);
        edits += e;
        refs += reference.len();
        wrong += usize::from(e > 0);
        let e_ns = edit_distance(&phonemes(hyp), &phonemes(reference));
        edits_ns += e_ns;
        wrong_ns += usize::from(e_ns > 0);
        score += s;
    }
    let n = decoded.len();
    G2pMetrics {
        per: edits as f64 / refs.max(1) as f64,
        wer: wrong as f64 / n.max(1) as f64,
        per_no_stress: edits_ns as f64 / refs.max(1) as f64,
        wer_no_stress: wrong_ns as f64 / n.max(1) as f64,
        words: n,
        beam: width,
        mean_score: score / n.max(1) as f64,
    }
}

/// Decodes up to `limit` words of `data` with beam `width` and scores them
/// ([`decode`], then [`score`]).
pub fn evaluate(models: &[&G2p], data: &Pronunciations, width: usize, limit: usize) -> Result<G2pMetrics, TrainError> {
    Ok(score(&decode(models, data, width, limit)?, data, width))
}
