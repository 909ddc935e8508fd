//! The phones in a featurize output's shards (`ref_phones`,
//! `ref_phone_starts`, `ref_phone_ends`), rewritten into a copy of it:
//! from the transcripts (CMUDict pronunciations, the G2P model's for words
//! missing from it, silences at the ends and at pauses, no times) for the segmentation model and the aligner, so that a
//! corpus's own labels are never needed; and from the aligner's phones and
//! times for the duration/F0 model and the WaveNet. Everything but the
//! shards (`chunks/`, `manifest.json`) is copied as it is.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use anyhow::Context;
use dv_manifest::write_parquet;
use dv_speak::SpeakError;
use dv_text::{Lexicon, Phoneme, StressedPhoneme};
use polars::prelude::*;

/// Phones and times of one utterance; `None` marks it unusable (no phones).
type Phones = Option<(Vec<String>, Option<(Vec<f64>, Vec<f64>)>)>;

/// An aligned utterance: phones, their starts and ends (seconds).
pub(crate) type Aligned = (Vec<String>, Vec<f64>, Vec<f64>);

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

/// The phone names of pronounced sentences, consecutive silences merged;
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
    (out.len() > 2).then(|| out.iter().map(|p| p.phoneme.to_string()).collect())
}

fn list_of<T>(name: &str, inner: DataType, rows: impl Iterator<Item = Option<Vec<T>>>) -> anyhow::Result<Column>
where
    Series: NamedFrom<Vec<T>, [T]>,
{
    let ca: ListChunked = rows.map(|r| r.map(|v| Series::new(PlSmallStr::EMPTY, v))).collect();
    Ok(ca.into_series().cast(&DataType::List(Box::new(inner)))?.with_name(name.into()).into_column())
}

/// Copies the featurize output `from` to `to` with each shard's phone
/// columns set by `phones(id)`; returns (utterances with phones, without).
pub(crate) fn rewrite(from: &Path, to: &Path, phones: &dyn Fn(&str) -> Phones) -> anyhow::Result<(usize, usize)> {
    if to.exists() {
        std::fs::remove_dir_all(to).with_context(|| format!("removing {}", to.display()))?;
    }
    copy_except_shards(from, to)?;
    let (mut with, mut without) = (0, 0);
    let shards = from.join("shards");
    std::fs::create_dir_all(to.join("shards"))?;
    let mut names: Vec<_> = std::fs::read_dir(&shards)
        .with_context(|| format!("reading {}", shards.display()))?
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .filter(|n| n.to_string_lossy().ends_with(".parquet"))
        .collect();
    names.sort();
    for name in names {
        let path = shards.join(&name);
        let file = File::open(&path).with_context(|| format!("opening {}", path.display()))?;
        let mut df =
            anyhow::Context::with_context(ParquetReader::new(file).finish(), || format!("reading {}", path.display()))?;
        let ids: Vec<String> = df.column("id")?.str()?.iter().map(|s| s.unwrap_or_default().to_string()).collect();
        let rows: Vec<Phones> = ids.iter().map(|id| phones(id)).collect();
        with += rows.iter().filter(|r| r.is_some()).count();
        without += rows.iter().filter(|r| r.is_none()).count();
        let names = list_of("ref_phones", DataType::String, rows.iter().map(|r| r.as_ref().map(|(p, _)| p.clone())))?;
        let starts = list_of(
            "ref_phone_starts",
            DataType::Float64,
            rows.iter().map(|r| r.as_ref().and_then(|(_, t)| t.as_ref().map(|t| t.0.clone()))),
        )?;
        let ends = list_of(
            "ref_phone_ends",
            DataType::Float64,
            rows.iter().map(|r| r.as_ref().and_then(|(_, t)| t.as_ref().map(|t| t.1.clone()))),
        )?;
        df.with_column(names)?;
        df.with_column(starts)?;
        df.with_column(ends)?;
        write_parquet(&mut df, &to.join("shards").join(&name))
            .with_context(|| format!("writing {}", to.join("shards").join(&name).display()))?;
    }
    Ok((with, without))
}

fn copy_except_shards(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for e in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type()?.is_dir() {
            if e.file_name() != "shards" {
                copy_except_shards(&src, &dst)?;
            }
        } else {
            std::fs::copy(&src, &dst).with_context(|| format!("copying {}", src.display()))?;
        }
    }
    Ok(())
}

/// The aligner's phones and times by id from `alignments.parquet`, without
/// the quarantined utterances.
pub(crate) fn read_alignments(path: &Path) -> anyhow::Result<HashMap<String, Aligned>> {
    read_phone_columns(path, ["phones", "starts", "ends"], Some("quarantined"))
}

/// The corpus's own phones and times in a featurize output's shards
/// (`ref_phones`, `ref_phone_starts`, `ref_phone_ends`) by utterance id;
/// utterances without them (a corpus of audio and text) are left out.
pub(crate) fn read_reference(features: &Path) -> anyhow::Result<HashMap<String, Aligned>> {
    let mut out = HashMap::new();
    for shard in crate::align::shard_files(&features.to_string_lossy())? {
        out.extend(read_phone_columns(&shard, ["ref_phones", "ref_phone_starts", "ref_phone_ends"], None)?);
    }
    Ok(out)
}

/// `id` plus the phones, starts and ends columns `cols` of a Parquet file,
/// rows with a null in any of them (or true in `skip`) left out.
fn read_phone_columns(path: &Path, cols: [&str; 3], skip: Option<&str>) -> anyhow::Result<HashMap<String, Aligned>> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let df =
        anyhow::Context::with_context(ParquetReader::new(file).finish(), || format!("reading {}", path.display()))?;
    let ids = df.column("id")?.str()?.clone();
    let phones = df.column(cols[0])?.list()?.clone();
    let starts = df.column(cols[1])?.list()?.clone();
    let ends = df.column(cols[2])?.list()?.clone();
    let skipped = skip.and_then(|c| df.column(c).ok().and_then(|c| c.bool().ok().cloned()));
    let floats = |l: &ListChunked, i: usize| -> Option<Vec<f64>> { l.get_as_series(i)?.f64().ok()?.iter().collect() };
    let mut out = HashMap::new();
    for i in 0..df.height() {
        if skipped.as_ref().and_then(|q| q.get(i)).unwrap_or(false) {
            continue;
        }
        let Some(id) = ids.get(i) else { continue };
        let p: Option<Vec<String>> = phones
            .get_as_series(i)
            .and_then(|s| s.str().ok().and_then(|c| c.iter().map(|x| x.map(String::from)).collect()));
        if let (Some(p), Some(s), Some(e)) = (p, floats(&starts, i), floats(&ends, i)) {
            if !p.is_empty() {
                out.insert(id.to_string(), (p, s, e));
            }
        }
    }
    Ok(out)
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
            Some((lp, ls, le)) if lp == p => errors
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
