//! A real corpus for the segmentation model: the MFCC frames and reference
//! phones that `dv featurize` wrote, as phoneme-pair CTC examples (Deep
//! Voice §3.2).
//!
//! # What is read
//!
//! Every `shards/*.parquet` under a featurize output directory, columns `id`,
//! `mfcc` (list\<float32\>, frame-major `[frames, 20]`), `mfcc_frames` and
//! `ref_phones` (list\<utf8\>, null when the corpus has no labels), all into
//! memory at start. Only local directories (a path or a `file://` URL) are
//! read for now; an object-store URL is a configuration error.
//!
//! # Labels
//!
//! Reference phones are parsed as festival/ARCTIC labels write them
//! ([`Phoneme::from_festival`]: lower- or upper-case ARPABET, `pau`, `h#`,
//! `sil`, `ssil` and `brth` are silence, `ax` is `AH`; a stress digit such as `ER1`'s is dropped).
//! Consecutive silences merge into one, and a silence is added at either end
//! that lacks one (silence starts and ends every utterance, App. A.3). The
//! labels are the neighbouring pairs ([`phoneme_pairs`]) with label
//! `pair.index() + 1` in `1..=1600`, so the model has 1601 outputs, blank 0.
//!
//! # Skipped utterances
//!
//! An utterance with no reference phones, with a phone outside the inventory,
//! with fewer frames than CTC needs (labels plus repeated neighbours), with
//! more than `max_frames` frames, or whose MFCC column is malformed (null,
//! NaN, or a length other than `mfcc_frames × 20`) is skipped and counted by
//! reason ([`Skipped`]); it never fails the run. A directory with no shards,
//! an unreadable shard or a missing column is an error naming the file.
//!
//! # Validation split
//!
//! An utterance is held out when `splitmix64(seed ^ fnv1a64(id)) / 2^64 <
//! validation_fraction`: a function of its id and the seed alone, so the
//! split does not depend on shard count, shard order or which utterances
//! were skipped, and adding utterances to a corpus never moves old ones
//! across it.

use std::path::{Path, PathBuf};

use dv_featurize::format::{self, column};
use dv_featurize::FeaturizeError;
use dv_text::{phoneme_pairs, Phoneme, Stress, StressedPhoneme};
use dv_torch::tch::{Device, Tensor};
use polars::prelude::*;

use super::chunks::stressed_phone;
use super::dataset::Dataset;
use super::sampler::splitmix64;
use super::skipped::{Reason, Skipped};
use crate::models::model::Batch;
use crate::TrainError;

// Defined in dv-config with the run config, which parses them without libtorch.
pub use dv_config::{FeaturesConfig, FEATURE_MFCC, FRAME_SECONDS, PAIR_CLASSES};

/// One usable utterance.
#[derive(Debug, Clone)]
struct Utterance {
    /// `[frames, 20]`, frame-major.
    mfcc: Vec<f32>,
    frames: usize,
    labels: Vec<i64>,
    /// Internal boundaries of the reference phones, seconds (see
    /// [`reference_boundaries`]), when the shard has usable times.
    boundaries: Option<Vec<f64>>,
    /// The reference phones as [`merged_phones`] gives them, when their
    /// names carry stress (a digit on some vowel, as CMUDict writes them).
    stressed: Option<Vec<StressedPhoneme>>,
}

/// Featurized utterances with their pair labels, addressed by index in id
/// order.
#[derive(Debug, Clone, Default)]
pub struct Features {
    ids: Vec<String>,
    utterances: Vec<Utterance>,
}

/// A loaded corpus split in two.
#[derive(Debug, Clone)]
pub struct FeatureSplit {
    pub train: Features,
    pub validation: Features,
    pub skipped: Skipped,
    /// Shards read.
    pub shards: usize,
    /// Whether `manifest.json` exists (featurize finished every shard).
    pub complete: bool,
}

/// The reference phones merged as the §3.2 labels need them: silences
/// mapped and runs of them merged into one, a silence added at either end
/// when the phones lack one, each phone with the stress its name carries
/// (`ER1`; none without a digit). An unknown phone name is an error.
pub fn merged_phones<S: AsRef<str>>(phones: &[S]) -> Result<Vec<StressedPhoneme>, dv_text::TextError> {
    let sil = StressedPhoneme::new(Phoneme::Sil, Stress::None);
    let mut seq = vec![sil];
    for p in phones {
        let sp = stressed_phone(p.as_ref())
            .ok_or_else(|| dv_text::TextError::UnknownPhoneme { symbol: p.as_ref().to_string() })?;
        if !(sp.phoneme == Phoneme::Sil && seq.last().map(|l| l.phoneme) == Some(Phoneme::Sil)) {
            seq.push(sp);
        }
    }
    if seq.last().map(|l| l.phoneme) != Some(Phoneme::Sil) {
        seq.push(sil);
    }
    Ok(seq)
}

/// The §3.2 label sequence of reference phones: pair index + 1 per
/// neighbouring pair of [`merged_phones`] (module docs). Stress is not part
/// of a pair label: `ER1` is `ER`. An unknown phone name is an error.
pub fn pair_labels<S: AsRef<str>>(phones: &[S]) -> Result<Vec<i64>, dv_text::TextError> {
    Ok(labels_of(&merged_phones(phones)?))
}

/// Pair index + 1 per neighbouring pair of merged phones.
fn labels_of(merged: &[StressedPhoneme]) -> Vec<i64> {
    let seq: Vec<Phoneme> = merged.iter().map(|p| p.phoneme).collect();
    phoneme_pairs(&seq).into_iter().map(|p| p.index() as i64 + 1).collect()
}

/// Names for decoded phonemes that carry the stress of the reference's
/// ([`merged_phones`]): each decoded phoneme takes the stress of the next
/// reference phone of the same phoneme (the decoder may add or drop a
/// silence), and is written as [`StressedPhoneme`] writes it (`AH1`,
/// `HH`). A phoneme with no match keeps its bare name.
pub fn restressed(decoded: &[Phoneme], reference: &[StressedPhoneme]) -> Vec<String> {
    let mut next = 0;
    decoded
        .iter()
        .map(|&p| match reference[next.min(reference.len())..].iter().position(|r| r.phoneme == p) {
            Some(k) => {
                let r = reference[next + k];
                next += k + 1;
                r.to_string()
            }
            None => p.to_string(),
        })
        .collect()
}

/// The internal boundaries (seconds) of reference phones merged the way
/// [`pair_labels`] merges them: runs of silences become one silence from
/// the first's start to the last's end, and boundary `k` is the end of
/// merged phone `k` (the middle of the gap when the next starts later).
/// `None` when the times do not fit the phones (different counts, a
/// non-finite or decreasing time) or when [`pair_labels`] had to add a
/// silence at either end, which has no reference time.
pub fn reference_boundaries<S: AsRef<str>>(phones: &[S], starts: &[f64], ends: &[f64]) -> Option<Vec<f64>> {
    if phones.len() != starts.len() || phones.len() != ends.len() {
        return None;
    }
    let mut merged: Vec<(Phoneme, f64, f64)> = Vec::with_capacity(phones.len());
    for ((p, &start), &end) in phones.iter().zip(starts).zip(ends) {
        let ph = stressed_phone(p.as_ref())?.phoneme;
        if !start.is_finite() || !end.is_finite() || end < start {
            return None;
        }
        match merged.last_mut() {
            Some(last) if ph == Phoneme::Sil && last.0 == Phoneme::Sil => last.2 = end,
            _ => merged.push((ph, start, end)),
        }
    }
    if merged.first()?.0 != Phoneme::Sil || merged.last()?.0 != Phoneme::Sil {
        return None;
    }
    let bounds: Vec<f64> = merged.windows(2).map(|w| 0.5 * (w[0].2 + w[1].1)).collect();
    bounds.windows(2).all(|w| w[0] <= w[1]).then_some(bounds)
}

/// Frames CTC needs for `labels`: one per label and one blank between each
/// two equal neighbours.
pub fn ctc_min_frames(labels: &[i64]) -> usize {
    labels.len() + labels.windows(2).filter(|w| w[0] == w[1]).count()
}

/// Whether utterance `id` is held out (module docs).
pub fn is_validation(id: &str, seed: u64, fraction: f64) -> bool {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    (splitmix64(seed ^ h) as f64 / 18_446_744_073_709_551_616.0) < fraction
}

/// The local directory the `[data] url` `url` names
/// ([`format::local_root`]); any URL but `file://` is a
/// [`TrainError::Config`] naming it.
pub(crate) fn local_dir(url: &str) -> Result<PathBuf, TrainError> {
    format::local_root(Path::new(url))
        .map_err(|e| TrainError::Config { path: "[data] url".into(), reason: e.to_string() })
}

/// The `*.parquet` files in `dir` ([`format::SHARDS`] or
/// [`format::CHUNKS`]) of the featurize output at `root`, sorted
/// ([`format::parquet_files`]); none is an error.
pub(crate) fn parquet_files(root: &Path, dir: &str) -> Result<Vec<PathBuf>, TrainError> {
    let v = format::parquet_files(root, dir).map_err(|e| match e {
        FeaturizeError::Io { path, source, .. } => data_err(&path, source),
        e => data_err(&root.join(dir), e),
    })?;
    if v.is_empty() {
        return Err(data_err(&root.join(dir), "no *.parquet shards (run `dv featurize` first)"));
    }
    Ok(v)
}

pub(crate) fn data_err(path: &Path, reason: impl std::fmt::Display) -> TrainError {
    TrainError::Features { path: path.display().to_string(), reason: reason.to_string() }
}

/// What one shard row becomes.
enum Row {
    Keep(String, Utterance),
    Skip(Reason),
}

impl Features {
    /// Reads every shard of the featurize output at `config.url` and splits
    /// it (module docs).
    pub fn load(config: &FeaturesConfig) -> Result<FeatureSplit, TrainError> {
        let dir = local_dir(&config.url)?;
        let shards = parquet_files(&dir, format::SHARDS)?;
        let mut skipped = Skipped::default();
        let mut rows: Vec<(String, Utterance)> = Vec::new();
        for shard in &shards {
            for row in read_shard(shard, config.max_frames)? {
                match row {
                    Row::Keep(id, u) => rows.push((id, u)),
                    Row::Skip(reason) => skipped.count(reason),
                }
            }
        }
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        let (mut train, mut validation) = (Features::default(), Features::default());
        for (id, u) in rows {
            let set =
                if is_validation(&id, config.seed, config.validation_fraction) { &mut validation } else { &mut train };
            set.ids.push(id);
            set.utterances.push(u);
        }
        Ok(FeatureSplit {
            train,
            validation,
            skipped,
            shards: shards.len(),
            complete: dir.join(format::MANIFEST).exists(),
        })
    }

    /// Utterance ids in index order.
    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    /// Label sequence of utterance `index`.
    pub fn labels(&self, index: usize) -> Option<&[i64]> {
        self.utterances.get(index).map(|u| u.labels.as_slice())
    }

    /// MFCCs of utterance `index`: `[frames, 20]`, frame-major.
    pub fn mfcc(&self, index: usize) -> Option<&[f32]> {
        self.utterances.get(index).map(|u| u.mfcc.as_slice())
    }

    /// MFCC frames of utterance `index`.
    pub fn frames_of(&self, index: usize) -> Option<usize> {
        self.utterances.get(index).map(|u| u.frames)
    }

    /// Reference internal boundaries of utterance `index`, seconds, one per
    /// label ([`reference_boundaries`]).
    pub fn reference_boundaries(&self, index: usize) -> Option<&[f64]> {
        self.utterances.get(index).and_then(|u| u.boundaries.as_deref())
    }

    /// The reference phones of utterance `index` with their stress
    /// ([`merged_phones`]), when its phone names carry stress.
    pub fn reference_stressed(&self, index: usize) -> Option<&[StressedPhoneme]> {
        self.utterances.get(index).and_then(|u| u.stressed.as_deref())
    }

    /// Total frames.
    pub fn frames(&self) -> usize {
        self.utterances.iter().map(|u| u.frames).sum()
    }
}

fn read_shard(path: &Path, max_frames: Option<usize>) -> Result<Vec<Row>, TrainError> {
    let file = std::fs::File::open(path).map_err(|e| data_err(path, e))?;
    let mut columns = [column::ID, column::MFCC, column::MFCC_FRAMES, column::REF_PHONES].map(String::from).to_vec();
    let schema = ParquetReader::new(std::fs::File::open(path).map_err(|e| data_err(path, e))?)
        .schema()
        .map_err(|e| data_err(path, e))?;
    // Reference times are optional: older or hand-made shards may lack them.
    let time_columns = [column::REF_PHONE_STARTS, column::REF_PHONE_ENDS];
    let timed = time_columns.iter().all(|c| schema.get(c).is_some());
    if timed {
        columns.extend(time_columns.map(String::from));
    }
    let df = ParquetReader::new(file).with_columns(Some(columns)).finish().map_err(|e| data_err(path, e))?;
    let col = |name: &str| df.column(name).map_err(|e| data_err(path, format!("column {name}: {e}")));
    let ids = col(column::ID)?.str().map_err(|e| data_err(path, format!("column {}: {e}", column::ID)))?.clone();
    let mfcc = col(column::MFCC)?.list().map_err(|e| data_err(path, format!("column {}: {e}", column::MFCC)))?.clone();
    let frames = col(column::MFCC_FRAMES)?
        .cast(&DataType::UInt64)
        .and_then(|c| c.u64().cloned())
        .map_err(|e| data_err(path, format!("column {}: {e}", column::MFCC_FRAMES)))?;
    let phones = col(column::REF_PHONES)?
        .list()
        .map_err(|e| data_err(path, format!("column {}: {e}", column::REF_PHONES)))?
        .clone();
    let times = |name: &str| -> Result<Option<ListChunked>, TrainError> {
        if !timed {
            return Ok(None);
        }
        Ok(Some(col(name)?.list().map_err(|e| data_err(path, format!("column {name}: {e}")))?.clone()))
    };
    let (starts, ends) = (times(column::REF_PHONE_STARTS)?, times(column::REF_PHONE_ENDS)?);
    let floats = |l: &Option<ListChunked>, i: usize| -> Option<Vec<f64>> {
        let s = l.as_ref()?.get_as_series(i)?.cast(&DataType::Float64).ok()?;
        s.f64().ok()?.iter().collect()
    };
    let mut out = Vec::with_capacity(df.height());
    for i in 0..df.height() {
        let Some(id) = ids.get(i) else {
            out.push(Row::Skip(Reason::Malformed));
            continue;
        };
        let mut r = row(id, mfcc.get_as_series(i), frames.get(i), phones.get_as_series(i), max_frames);
        if let (Row::Keep(_, u), Some(names)) = (&mut r, phones.get_as_series(i)) {
            let names: Option<Vec<String>> =
                names.str().ok().and_then(|c| c.iter().map(|p| p.map(String::from)).collect());
            if let (Some(names), Some(st), Some(en)) = (names, floats(&starts, i), floats(&ends, i)) {
                u.boundaries = reference_boundaries(&names, &st, &en).filter(|b| b.len() == u.labels.len());
            }
        }
        out.push(r);
    }
    Ok(out)
}

fn row(id: &str, mfcc: Option<Series>, frames: Option<u64>, phones: Option<Series>, max: Option<usize>) -> Row {
    let names: Vec<String> = match phones.as_ref().map(|s| s.str().map(|c| c.iter().map(|p| p.map(String::from)))) {
        Some(Ok(it)) => match it.collect::<Option<Vec<String>>>() {
            Some(v) if !v.is_empty() => v,
            Some(_) => return Row::Skip(Reason::NoReference),
            None => return Row::Skip(Reason::Malformed),
        },
        Some(Err(_)) => return Row::Skip(Reason::Malformed),
        None => return Row::Skip(Reason::NoReference),
    };
    let Ok(merged) = merged_phones(&names) else {
        return Row::Skip(Reason::UnknownPhone);
    };
    let labels = labels_of(&merged);
    let has_stress = names.iter().any(|n| n.ends_with(|c: char| c.is_ascii_digit()));
    let stressed = has_stress.then_some(merged);
    let (Some(mfcc), Some(frames)) = (mfcc, frames.map(|f| f as usize)) else {
        return Row::Skip(Reason::Malformed);
    };
    if max.is_some_and(|m| frames > m) {
        return Row::Skip(Reason::OverMaxFrames);
    }
    let values: Option<Vec<f32>> = match mfcc.f32() {
        Ok(c) => c.iter().map(|v| v.filter(|x| x.is_finite())).collect(),
        Err(_) => None,
    };
    let Some(values) = values.filter(|v| v.len() == frames * FEATURE_MFCC) else {
        return Row::Skip(Reason::Malformed);
    };
    if frames < ctc_min_frames(&labels) {
        return Row::Skip(Reason::TooShortForCtc);
    }
    Row::Keep(id.to_string(), Utterance { mfcc: values, frames, labels, boundaries: None, stressed })
}

impl Dataset for Features {
    fn len(&self) -> usize {
        self.utterances.len()
    }

    fn length(&self, index: usize) -> usize {
        self.utterances.get(index).map_or(0, |u| u.frames)
    }

    /// # Shapes
    /// `inputs` `[b, t_max, 20]` with `t_max` the batch's longest utterance,
    /// zero past each length; `targets` the labels concatenated.
    fn batch(&self, indices: &[usize], device: Device) -> Result<Batch, TrainError> {
        let f = FEATURE_MFCC;
        let mut examples = Vec::with_capacity(indices.len());
        for &i in indices {
            examples.push(self.utterances.get(i).ok_or_else(|| TrainError::Features {
                path: "(in memory)".into(),
                reason: format!("index {i} past the {} utterances", self.utterances.len()),
            })?);
        }
        let t_max = examples.iter().map(|u| u.frames).max().unwrap_or(0);
        let mut inputs = vec![0.0f32; indices.len() * t_max * f];
        for (b, u) in examples.iter().enumerate() {
            inputs[b * t_max * f..b * t_max * f + u.frames * f].copy_from_slice(&u.mfcc);
        }
        let targets: Vec<i64> = examples.iter().flat_map(|u| u.labels.iter().copied()).collect();
        let frames: usize = examples.iter().map(|u| u.frames).sum();
        Ok(Batch {
            // [b, t_max, 20]
            inputs: Tensor::from_slice(&inputs)
                .f_view([indices.len() as i64, t_max as i64, f as i64])?
                .f_to_device(device)?,
            input_lengths: examples.iter().map(|u| u.frames as i64).collect(),
            targets: Tensor::from_slice(&targets).f_to_device(device)?,
            target_lengths: examples.iter().map(|u| u.labels.len() as i64).collect(),
            example_ids: indices.to_vec(),
            audio_seconds: Some(frames as f64 * FRAME_SECONDS),
        })
    }
}
