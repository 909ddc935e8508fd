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
                    None => model.insert(crate::export::load_g2p(path)?),
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
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let df =
        anyhow::Context::with_context(ParquetReader::new(file).finish(), || format!("reading {}", path.display()))?;
    let ids = df.column("id")?.str()?.clone();
    let phones = df.column("phones")?.list()?.clone();
    let starts = df.column("starts")?.list()?.clone();
    let ends = df.column("ends")?.list()?.clone();
    let quarantined = df.column("quarantined").ok().and_then(|c| c.bool().ok().cloned());
    let floats = |l: &ListChunked, i: usize| -> Option<Vec<f64>> { l.get_as_series(i)?.f64().ok()?.iter().collect() };
    let mut out = HashMap::new();
    for i in 0..df.height() {
        if quarantined.as_ref().and_then(|q| q.get(i)).unwrap_or(false) {
            continue;
        }
        let Some(id) = ids.get(i) else { continue };
        let p: Option<Vec<String>> = phones
            .get_as_series(i)
            .and_then(|s| s.str().ok().and_then(|c| c.iter().map(|x| x.map(String::from)).collect()));
        if let (Some(p), Some(s), Some(e)) = (p, floats(&starts, i), floats(&ends, i)) {
            out.insert(id.to_string(), (p, s, e));
        }
    }
    Ok(out)
}
