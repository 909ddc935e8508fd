//! The job: shard assignment, parallel DSP, atomic shard writes, resume.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use dv_audio::AudioError;
use dv_corpus::{BadItem, BadReason, Utterance};

use crate::features::{features_with, Dsp};
use crate::format::{shard_name, BAD, CHUNKS, MANIFEST, REPORTS, SHARDS};
use crate::shard::{bad_bytes, chunks_frame, features_frame, parquet_bytes};
use crate::stage::{is_remote, stage_corpus, Staged};
use crate::{FeaturizeError, Store, UtteranceFeatures};

/// `--shard i/N`: run only shard `i` (0-based) of `N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    pub index: usize,
    pub count: usize,
}

impl FromStr for ShardSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("expected i/N with 0 <= i < N, got {s:?}");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(ShardSpec { index, count })
    }
}

/// What to featurize, and where.
#[derive(Debug, Clone)]
pub struct Job {
    /// Corpus directory, `.tsv`/`.csv` table (see `dv-corpus`), or either
    /// of them as a `file://`, `s3://`, `gs://` or `az://` URL.
    pub corpus: String,
    /// Where corpora on object stores are mirrored before reading (default:
    /// `dv-staging` in the system's temporary directory).
    pub staging: Option<PathBuf>,
    /// Output directory or object-store URL.
    pub out: String,
    /// Total shards; default one per 256 utterances. Ignored with `only`.
    pub shards: Option<usize>,
    /// Run one shard only (cluster arrays).
    pub only: Option<ShardSpec>,
    /// DSP threads.
    pub jobs: usize,
    /// Model rate, Hz (16384, Deep Voice App. A.3).
    pub sample_rate: u32,
}

/// Where a running job stands.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub utterances_done: usize,
    pub utterances_total: usize,
    pub audio_seconds: f64,
    pub elapsed: f64,
}

/// What a job did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub shards_total: usize,
    pub shards_written: usize,
    /// Shards found complete and skipped.
    pub shards_skipped: usize,
    pub utterances: usize,
    pub skipped: BTreeMap<String, usize>,
    /// The utterances this run dropped that the corpus reader had passed (too long, unreadable
    /// audio), each naming its file and why; with the reader's own bad items in the shards'
    /// `bad/` tables.
    pub dropped: Vec<BadItem>,
    pub audio_seconds: f64,
    pub chunks: usize,
    pub silent_chunks: usize,
    pub elapsed: f64,
    /// Whether this run found every shard complete and wrote `manifest.json`.
    pub manifest_written: bool,
    /// What mirroring a corpus from an object store did, if it was one.
    pub staged: Option<Staged>,
}

fn bad_reason(e: &FeaturizeError) -> BadReason {
    match e {
        FeaturizeError::Audio(AudioError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            BadReason::MissingAudio
        }
        FeaturizeError::Audio(AudioError::Truncated { .. }) => BadReason::TruncatedAudio,
        FeaturizeError::TooLong { .. } => BadReason::TooLong,
        FeaturizeError::Audio(AudioError::Empty { .. }) => BadReason::EmptyAudio,
        FeaturizeError::Audio(AudioError::Unsupported { .. } | AudioError::Resample { .. }) => {
            BadReason::UnsupportedAudio
        }
        _ => BadReason::UnreadableAudio,
    }
}

/// Runs the job; `progress` is called as utterances finish.
pub fn run(job: &Job, progress: &mut dyn FnMut(Progress)) -> Result<Report, FeaturizeError> {
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| FeaturizeError::Shard(format!("tokio runtime: {e}")))?;
    let store = Store::open(&job.out)?;
    let staged = if is_remote(&job.corpus) {
        let root = job.staging.clone().unwrap_or_else(|| std::env::temp_dir().join("dv-staging"));
        Some(stage_corpus(&job.corpus, &root, &rt)?)
    } else {
        None
    };
    let corpus_path = staged.as_ref().map_or(job.corpus.clone(), |s| s.local.to_string_lossy().into_owned());
    let corpus = dv_corpus::read(&corpus_path, None)?;
    let mut utts = corpus.utterances;
    utts.sort_by(|a, b| a.id.cmp(&b.id));
    let n = match job.only {
        Some(s) => s.count,
        None => job.shards.unwrap_or(utts.len().div_ceil(256)).max(1),
    };
    let wanted: Vec<usize> = match job.only {
        Some(s) => vec![s.index],
        None => (0..n).collect(),
    };
    let done: Vec<String> = rt.block_on(store.list(SHARDS))?;
    let mut report = Report { shards_total: n, staged, ..Report::default() };
    let todo: Vec<usize> = wanted
        .into_iter()
        .filter(|i| {
            let present = done.iter().any(|d| d == &format!("{SHARDS}/{}.parquet", shard_name(*i, n)));
            report.shards_skipped += usize::from(present);
            !present
        })
        .collect();
    let total: usize = todo.iter().map(|i| (0..utts.len()).filter(|k| k % n == *i).count()).sum();
    let mut done_utts = 0;
    for i in todo {
        let mine: Vec<&Utterance> = utts.iter().enumerate().filter(|(k, _)| k % n == i).map(|(_, u)| u).collect();
        let mut bad: Vec<BadItem> =
            corpus.bad.iter().enumerate().filter(|(k, _)| k % n == i).map(|(_, b)| b.clone()).collect();
        let mut rows = Vec::with_capacity(mine.len());
        for (u, result) in mine.iter().zip(process(&mine, job, &mut |secs| {
            done_utts += 1;
            report.audio_seconds += secs;
            progress(Progress {
                utterances_done: done_utts,
                utterances_total: total,
                audio_seconds: report.audio_seconds,
                elapsed: started.elapsed().as_secs_f64(),
            });
        })?) {
            match result {
                Ok(f) => rows.push(f),
                Err(e) => {
                    let item = BadItem {
                        item: u.id.clone(),
                        file: PathBuf::from(&u.audio),
                        reason: bad_reason(&e),
                        detail: e.to_string(),
                    };
                    report.dropped.push(item.clone());
                    bad.push(item);
                }
            }
        }
        let name = shard_name(i, n);
        let chunks: usize = rows.iter().map(|r| r.chunks.len()).sum();
        let silent: usize = rows.iter().map(|r| r.silent_chunks).sum();
        let seconds: f64 = rows.iter().map(UtteranceFeatures::duration).sum();
        let mut by_reason: BTreeMap<String, usize> = BTreeMap::new();
        for b in &bad {
            *by_reason.entry(b.reason.as_str().to_string()).or_insert(0) += 1;
        }
        let shard_report = serde_json::json!({
            "shard": i, "of": n, "utterances": rows.len(), "skipped": by_reason,
            "audio_seconds": seconds, "chunks": chunks, "silent_chunks": silent, "sample_rate": job.sample_rate,
        });
        let features = parquet_bytes(&mut features_frame(&rows)?)?;
        let chunk_index = parquet_bytes(&mut chunks_frame(&rows)?)?;
        let bad_table = bad_bytes(&bad)?;
        rt.block_on(async {
            store.put(&format!("{CHUNKS}/{name}.parquet"), chunk_index).await?;
            store.put(&format!("{BAD}/{name}.parquet"), bad_table).await?;
            store.put(&format!("{REPORTS}/{name}.json"), shard_report.to_string().into_bytes()).await?;
            // Last: its presence marks the shard complete.
            store.put(&format!("{SHARDS}/{name}.parquet"), features).await
        })?;
        report.shards_written += 1;
        report.utterances += rows.len();
        report.chunks += chunks;
        report.silent_chunks += silent;
        for (k, v) in by_reason {
            *report.skipped.entry(k).or_insert(0) += v;
        }
    }
    report.manifest_written = rt.block_on(write_manifest(&store, n))?;
    report.elapsed = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Featurizes utterances on `job.jobs` threads; results in input order.
/// `done(seconds)` is called on this thread as each finishes.
fn process(
    utts: &[&Utterance],
    job: &Job,
    done: &mut dyn FnMut(f64),
) -> Result<Vec<Result<UtteranceFeatures, FeaturizeError>>, FeaturizeError> {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    let mut results: Vec<Option<Result<UtteranceFeatures, FeaturizeError>>> = (0..utts.len()).map(|_| None).collect();
    std::thread::scope(|s| -> Result<(), FeaturizeError> {
        for _ in 0..job.jobs.max(1) {
            let tx = tx.clone();
            let mut dsp = Dsp::new(job.sample_rate)?;
            let next = &next;
            s.spawn(move || loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= utts.len() {
                    return;
                }
                let r = features_with(&mut dsp, utts[k]);
                if tx.send((k, r)).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        for (k, r) in rx {
            done(r.as_ref().map_or(0.0, UtteranceFeatures::duration));
            results[k] = Some(r);
        }
        Ok(())
    })?;
    Ok(results.into_iter().map(|r| r.unwrap_or_else(|| Err(FeaturizeError::Shard("worker stopped".into())))).collect())
}

/// Writes `manifest.json` when all `n` shards exist; returns whether it did.
async fn write_manifest(store: &Store, n: usize) -> Result<bool, FeaturizeError> {
    let names: Vec<String> = (0..n).map(|i| shard_name(i, n)).collect();
    let present = store.list(SHARDS).await?;
    if !names.iter().all(|nm| present.iter().any(|p| p == &format!("{SHARDS}/{nm}.parquet"))) {
        return Ok(false);
    }
    let (mut utterances, mut seconds, mut chunks) = (0u64, 0.0f64, 0u64);
    let mut skipped: BTreeMap<String, u64> = BTreeMap::new();
    for nm in &names {
        let r: serde_json::Value = serde_json::from_slice(&store.get(&format!("{REPORTS}/{nm}.json")).await?)
            .map_err(|e| FeaturizeError::Shard(format!("{REPORTS}/{nm}.json: {e}")))?;
        utterances += r["utterances"].as_u64().unwrap_or(0);
        seconds += r["audio_seconds"].as_f64().unwrap_or(0.0);
        chunks += r["chunks"].as_u64().unwrap_or(0);
        if let Some(m) = r["skipped"].as_object() {
            for (k, v) in m {
                *skipped.entry(k.clone()).or_insert(0) += v.as_u64().unwrap_or(0);
            }
        }
    }
    let manifest = serde_json::json!({
        "shards": names.iter().map(|nm| format!("{SHARDS}/{nm}.parquet")).collect::<Vec<_>>(),
        "chunk_index": names.iter().map(|nm| format!("{CHUNKS}/{nm}.parquet")).collect::<Vec<_>>(),
        "utterances": utterances, "audio_seconds": seconds, "chunks": chunks, "skipped": skipped,
    });
    store.put(MANIFEST, serde_json::to_vec_pretty(&manifest).unwrap_or_default()).await?;
    Ok(true)
}
