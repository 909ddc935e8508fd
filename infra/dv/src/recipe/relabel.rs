//! The phones that [`dv_featurize::format::rewrite`] writes into a copy of
//! a featurize output's shards (`ref_phones`, `ref_phone_starts`,
//! `ref_phone_ends`): from the transcripts (CMUDict pronunciations, the G2P
//! model's for words missing from it, silences at the ends and at pauses,
//! no times) for the segmentation model and the aligner, so that a
//! corpus's own labels are never needed; and from the aligner's phones and
//! times for the duration/F0 model and the WaveNet. And the aligner scored
//! against a corpus's own labels.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context;
use dv_speak::SpeakError;
use dv_text::{Lexicon, Phoneme, StressedPhoneme};

/// An aligned utterance: phones, their starts and ends (seconds).
pub(crate) type Aligned = dv_featurize::format::Phones;

/// The phones of many transcripts, by utterance id, with what went to the
/// G2P model and what was left out.
#[derive(Debug, Default)]
pub(crate) struct TextPhones {
    /// `None`: the utterance is left out (see `left_out`).
    pub phones: HashMap<String, Option<Vec<String>>>,
    /// Words missing from the lexicon that the G2P model pronounced, with
    /// their counts, the most frequent first.
    pub g2p_words: Vec<(String, usize)>,
    /// Utterances with at least one such word.
    pub g2p_utterances: usize,
    /// `(id, why)` of each utterance left out.
    pub left_out: Vec<(String, String)>,
}

/// The phones of each `(id, transcript)` as dv-speak pronounces text
/// ([`dv_speak::pronounce`], as `dv g2p` and `dv synth` do): the lexicon's
/// first pronunciation, then the G2P checkpoint `g2p` (loaded on the first
/// word the lexicon lacks) for words missing from it; silences at the ends
/// and at pauses. An utterance is left out only when nothing in it is
/// speakable: no word, a word the lexicon lacks and no G2P model, or a word
/// the model cannot read (a letter outside its alphabet).
pub(crate) fn phones_of_texts(
    texts: &[(&str, &str)],
    lexicon: &Lexicon,
    g2p: Option<&Path>,
) -> anyhow::Result<TextPhones> {
    let mut out = TextPhones::default();
    let mut model: Option<dv_synth::G2p> = None;
    let mut counts: HashMap<String, usize> = HashMap::new();
    for (id, text) in texts {
        let pronounced = match (dv_speak::pronounce(text, lexicon, None), g2p) {
            (Err(SpeakError::OutOfVocabulary { words }), Some(path)) => {
                let m = match &mut model {
                    Some(m) => m,
                    None => model.insert(dv_train::export::load_g2p(path)?),
                };
                let r = dv_speak::pronounce(text, lexicon, Some(m));
                if r.is_ok() {
                    out.g2p_utterances += 1;
                    for w in words {
                        *counts.entry(w).or_default() += 1;
                    }
                }
                r
            }
            (r, _) => r,
        };
        let phones = match pronounced {
            Ok(sentences) => phones_of(sentences).ok_or_else(|| "nothing to say".to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(why) = &phones {
            out.left_out.push((id.to_string(), why.clone()));
        }
        out.phones.insert(id.to_string(), phones.ok());
    }
    out.g2p_words = counts.into_iter().collect();
    out.g2p_words.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(out)
}

/// The phone names of pronounced sentences with their stress (`AH1`),
/// consecutive silences merged;
/// `None` when there is no phone besides the framing silences.
fn phones_of(sentences: Vec<dv_speak::Pronounced>) -> Option<Vec<String>> {
    let mut out: Vec<StressedPhoneme> = Vec::new();
    for s in sentences {
        for p in s.phonemes {
            if !(p.phoneme == Phoneme::Sil && out.last().is_some_and(|l| l.phoneme == Phoneme::Sil)) {
                out.push(p);
            }
        }
    }
    // With CMUDict's stress (`AH1`): the aligner carries it to the
    // duration/F0 model and the conditioning; pair labels ignore it.
    (out.len() > 2).then(|| out.iter().map(|p| p.to_string()).collect())
}

/// The aligner's phones and times by id from its
/// [`dv_train::alignment::ALIGNMENTS`] (the columns its writer names in
/// [`dv_train::alignment::column`]), without the quarantined utterances.
pub(crate) fn read_alignments(path: &Path) -> anyhow::Result<HashMap<String, Aligned>> {
    use dv_train::alignment::column::{ENDS, PHONES, QUARANTINED, STARTS};
    Ok(dv_featurize::format::read_phones(path, [PHONES, STARTS, ENDS], Some(QUARANTINED))?)
}

/// The aligner's boundaries against a corpus's own labels (issue 30: a
/// corpus's labels, when it has them, only score the aligner).
#[derive(Debug)]
pub(crate) struct LabelScore {
    /// Over the utterances whose labels have the transcripts' phones.
    pub summary: Option<dv_align::BoundarySummary>,
    /// Aligned utterances whose labels name other phones (not scored).
    pub phones_differ: usize,
    /// Aligned utterances without labels.
    pub without_labels: usize,
}

/// Whether two phone sequences name the same phonemes, stress ignored
/// (`AH1` is `AH`; a corpus's labels rarely carry it).
fn same_phones(a: &[String], b: &[String]) -> bool {
    let bare = |p: &String| p.trim_end_matches(|c: char| c.is_ascii_digit()).to_ascii_uppercase();
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| bare(x) == bare(y))
}

/// Scores each aligned utterance against its labels when both name the
/// same phones (the transcripts' pronunciations and the labeller's can
/// differ: those are counted, not scored).
pub(crate) fn score_against_labels(
    labels: &HashMap<String, Aligned>,
    aligned: &HashMap<String, Aligned>,
) -> anyhow::Result<LabelScore> {
    let intervals = |s: &[f64], e: &[f64]| -> Vec<dv_align::PhoneInterval> {
        s.iter().zip(e).map(|(&start, &end)| dv_align::PhoneInterval { start, end }).collect()
    };
    let mut errors = dv_align::BoundaryErrors::new();
    let (mut phones_differ, mut without_labels) = (0, 0);
    let mut ids: Vec<&String> = aligned.keys().collect();
    ids.sort();
    for id in ids {
        let (p, s, e) = &aligned[id];
        match labels.get(id) {
            None => without_labels += 1,
            Some((lp, ls, le)) if same_phones(lp, p) => errors
                .add(&intervals(s, e), &intervals(ls, le))
                .with_context(|| format!("{id}: scoring against the corpus's labels"))?,
            Some(_) => phones_differ += 1,
        }
    }
    Ok(LabelScore { summary: errors.summary(), phones_differ, without_labels })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utt(phones: &[&str], bounds: &[f64]) -> Aligned {
        let p = phones.iter().map(|s| s.to_string()).collect();
        (p, bounds[..bounds.len() - 1].to_vec(), bounds[1..].to_vec())
    }

    #[test]
    fn labels_score_the_aligner_where_they_name_the_same_phones() {
        let labels: HashMap<String, Aligned> = [
            ("a".to_string(), utt(&["sil", "HH", "AY", "sil"], &[0.0, 0.30, 0.40, 0.70, 1.0])),
            ("b".to_string(), utt(&["sil", "B", "IY", "sil"], &[0.0, 0.2, 0.3, 0.5, 0.8])),
        ]
        .into();
        let same = labels.clone();
        let s = score_against_labels(&labels, &same).unwrap();
        let sum = s.summary.unwrap();
        assert_eq!((sum.utterances, sum.boundaries, s.phones_differ, s.without_labels), (2, 6, 0, 0));
        assert!(sum.mean_abs_ms.abs() < 1e-9);
        // every internal boundary 5 ms late; an utterance whose labels name
        // other phones and one without labels are counted, not scored
        let aligned: HashMap<String, Aligned> = [
            ("a".to_string(), utt(&["sil", "HH", "AY", "sil"], &[0.0, 0.305, 0.405, 0.705, 1.0])),
            ("b".to_string(), utt(&["sil", "B", "AY", "sil"], &[0.0, 0.2, 0.3, 0.5, 0.8])),
            ("c".to_string(), utt(&["sil", "AY", "sil"], &[0.0, 0.1, 0.2, 0.3])),
        ]
        .into();
        let s = score_against_labels(&labels, &aligned).unwrap();
        let sum = s.summary.unwrap();
        assert_eq!((sum.utterances, sum.boundaries, s.phones_differ, s.without_labels), (1, 3, 1, 1));
        assert!((sum.mean_abs_ms - 5.0).abs() < 1e-6 && (sum.mean_signed_ms - 5.0).abs() < 1e-6, "{sum:?}");
    }
}
