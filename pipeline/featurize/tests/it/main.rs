//! Integration tests of dv-featurize on a local output: shard contents,
//! bad inputs, resume, and `--shard i/N` workers.

use std::path::{Path, PathBuf};

use dv_corpus::embedded::{make, Request, Tools};
use dv_featurize::{run, Job, ShardSpec};
use polars::prelude::*;

/// A TSV corpus: `n` rendered utterances, one missing file, and one FLAC
/// cut in half (its header is fine, so only decoding finds the fault).
fn corpus(dir: &Path, n: usize) -> PathBuf {
    let req = Request {
        out: dir.join("slt"),
        utterances: n,
        seed: 2017,
        jobs: 2,
        labels_only: false,
        tools: Tools::default(),
    };
    make(&req, &mut |_, _| {}).expect("the recipe's Debian packages are installed");
    let mut tsv = String::from("path\ttext\tspeaker\n");
    for i in 1..=n {
        tsv.push_str(&format!("slt/wav/slt_fortune_{i:05}.wav\tSentence {i}.\tslt\n"));
    }
    tsv.push_str("missing.wav\tGone.\tslt\n");
    let flac = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run under cargo test"))
        .join("../audio/tests/fixtures/tone.flac");
    let bytes = std::fs::read(flac).unwrap();
    std::fs::write(dir.join("cut.flac"), &bytes[..bytes.len() / 2]).unwrap();
    tsv.push_str("cut.flac\tCut short.\tslt\n");
    let path = dir.join("list.tsv");
    std::fs::write(&path, tsv).unwrap();
    path
}

fn read(path: &Path) -> DataFrame {
    ParquetReader::new(std::fs::File::open(path).unwrap()).finish().unwrap()
}

fn job(corpus: &Path, out: &Path) -> Job {
    Job {
        corpus: corpus.to_str().unwrap().into(),
        out: out.to_str().unwrap().into(),
        staging: None,
        shards: Some(2),
        only: None,
        jobs: 2,
        sample_rate: 16_384,
    }
}

#[test]
fn shards_hold_consistent_features_and_reruns_skip_them() {
    let d = tempfile::tempdir().unwrap();
    let list = corpus(d.path(), 5);
    let out = d.path().join("feat");
    let mut calls = 0;
    let r = run(&job(&list, &out), &mut |_| calls += 1).unwrap();
    assert_eq!((r.shards_total, r.shards_written, r.shards_skipped), (2, 2, 0));
    assert_eq!(r.utterances, 5);
    assert_eq!(r.skipped.get("missing_audio"), Some(&1), "{:?}", r.skipped);
    assert_eq!(r.skipped.get("truncated_audio"), Some(&1), "{:?}", r.skipped);
    assert!(r.manifest_written && out.join("manifest.json").is_file());
    assert_eq!(calls, 6, "progress per utterance processed (5 good + the cut FLAC)");

    let mut rows = 0;
    let mut chunk_rows = 0;
    for i in 0..2 {
        let name = format!("shard-{i:05}-of-00002.parquet");
        let f = read(&out.join("shards").join(&name));
        rows += f.height();
        chunk_rows += read(&out.join("chunks").join(&name)).height();
        for k in 0..f.height() {
            let samples = f.column("samples").unwrap().u64().unwrap().get(k).unwrap() as usize;
            let mulaw = f.column("mulaw").unwrap().binary().unwrap().get(k).unwrap().len();
            assert_eq!(mulaw, samples);
            let frames = f.column("mfcc_frames").unwrap().u32().unwrap().get(k).unwrap() as usize;
            assert_eq!(frames, 1 + samples / 164, "10 ms frames at 16384 Hz");
            let mfcc = f.column("mfcc").unwrap().list().unwrap().get_as_series(k).unwrap();
            assert_eq!(mfcc.len(), frames * 20);
            let f0 = f.column("f0_hz").unwrap().list().unwrap().get_as_series(k).unwrap();
            let secs = samples as f64 / 16_384.0;
            assert_eq!(f0.len(), ((secs - 0.04) * 256.0).floor() as usize + 1, "Praat's frame count at 1/256 s");
            let voiced = f0.f32().unwrap().iter().flatten().filter(|v| *v > 0.0).count();
            assert!(voiced * 3 > f0.len(), "speech is mostly voiced");
        }
    }
    assert_eq!(rows, 5);
    assert_eq!(chunk_rows, r.chunks);
    let bad: usize = (0..2).map(|i| read(&out.join(format!("bad/shard-{i:05}-of-00002.parquet"))).height()).sum();
    assert_eq!(bad, 2);

    let again = run(&job(&list, &out), &mut |_| {}).unwrap();
    assert_eq!((again.shards_written, again.shards_skipped, again.utterances), (0, 2, 0));
}

#[test]
fn shard_workers_write_disjoint_outputs_and_the_last_writes_the_manifest() {
    let d = tempfile::tempdir().unwrap();
    let list = corpus(d.path(), 4);
    let out = d.path().join("feat");
    let worker = |i: usize| Job { only: Some(ShardSpec { index: i, count: 3 }), ..job(&list, &out) };
    let r1 = run(&worker(1), &mut |_| {}).unwrap();
    assert_eq!((r1.shards_total, r1.shards_written, r1.manifest_written), (3, 1, false));
    let names: Vec<String> =
        std::fs::read_dir(out.join("shards")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(names, ["shard-00001-of-00003.parquet"]);
    assert!(!out.join("manifest.json").exists());
    run(&worker(0), &mut |_| {}).unwrap();
    let r2 = run(&worker(2), &mut |_| {}).unwrap();
    assert!(r2.manifest_written);
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["utterances"], 4);
    assert_eq!(m["shards"].as_array().unwrap().len(), 3);
    assert!("3/3".parse::<ShardSpec>().is_err() && "a/b".parse::<ShardSpec>().is_err());
}

/// `seconds` of a 16-bit mono tone at 16 kHz.
fn tone_wav(path: &Path, seconds: f64) {
    let rate: u32 = 16_000;
    let n = (seconds * f64::from(rate)) as u32;
    let mut b = b"RIFF".to_vec();
    b.extend_from_slice(&(36 + 2 * n).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    for v in [16u32.to_le_bytes(), [1, 0, 1, 0], rate.to_le_bytes(), (rate * 2).to_le_bytes(), [2, 0, 16, 0]] {
        b.extend_from_slice(&v);
    }
    b.extend_from_slice(b"data");
    b.extend_from_slice(&(2 * n).to_le_bytes());
    for i in 0..n {
        b.extend_from_slice(&(((i as f32 * 0.11).sin() * 8000.0) as i16).to_le_bytes());
    }
    std::fs::write(path, b).unwrap();
}

#[test]
fn an_utterance_over_the_length_limit_is_a_bad_item_naming_the_limit() {
    let d = tempfile::tempdir().unwrap();
    let limit = dv_featurize::MAX_UTTERANCE_SECONDS;
    tone_wav(&d.path().join("at.wav"), limit);
    tone_wav(&d.path().join("over.wav"), limit + 0.5);
    let list = d.path().join("list.tsv");
    std::fs::write(&list, "path\ttext\nat.wav\tA tone.\nover.wav\tA longer tone.\n").unwrap();
    let out = d.path().join("feat");
    let r = run(&Job { shards: Some(1), ..job(&list, &out) }, &mut |_| {}).unwrap();
    assert_eq!(r.utterances, 1, "the utterance at the limit is featurized");
    assert_eq!(r.skipped.get("too_long"), Some(&1), "{:?}", r.skipped);
    assert_eq!(r.dropped.len(), 1, "{:?}", r.dropped);
    assert!(r.dropped[0].item == "over" && r.dropped[0].detail.contains("limit of 60 s"), "{:?}", r.dropped);
    let bad = read(&out.join("bad/shard-00000-of-00001.parquet"));
    let detail = bad.column("detail").unwrap().str().unwrap().get(0).unwrap().to_string();
    assert!(detail.contains("over.wav") && detail.contains("60.5 s") && detail.contains("limit of 60 s"), "{detail}");
    assert_eq!(bad.column("reason").unwrap().str().unwrap().get(0), Some("too_long"));
}

/// The ids in a shard, in row order.
fn ids(path: &Path) -> Vec<String> {
    read(path).column("id").unwrap().str().unwrap().iter().map(|s| s.unwrap().to_string()).collect()
}

#[test]
fn the_format_lists_reads_and_relabels_a_local_output() {
    use dv_featurize::format::{first_id, read_reference, rewrite, shard_files, Relabel};
    let d = tempfile::tempdir().unwrap();
    tone_wav(&d.path().join("a.wav"), 0.5);
    tone_wav(&d.path().join("b.wav"), 0.5);
    let list = d.path().join("list.tsv");
    std::fs::write(&list, "path\ttext\na.wav\tA tone.\nb.wav\tAnother tone.\n").unwrap();
    let out = d.path().join("feat");
    run(&job(&list, &out), &mut |_| {}).unwrap();

    let shards = shard_files(&out).unwrap();
    let names: Vec<String> = shards.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["shard-00000-of-00002.parquet", "shard-00001-of-00002.parquet"]);
    let url = format!("file://{}", out.display());
    assert_eq!(shard_files(Path::new(&url)).unwrap(), shards, "a file:// URL lists the same");
    let (first, second) = (ids(&shards[0]), ids(&shards[1]));
    assert_eq!((first.len(), second.len()), (1, 1));
    assert_eq!(first_id(&out).unwrap().as_ref(), Some(&first[0]));
    assert!(read_reference(&out).unwrap().is_empty(), "a corpus of audio and text has no reference phones");

    // One utterance gets phones and times, the other none.
    let phones = vec!["sil".to_string(), "AA".into(), "sil".into()];
    let times = (vec![0.0, 0.1, 0.4], vec![0.1, 0.4, 0.5]);
    let relabel = |id: &str| -> Relabel { (id == first[0]).then(|| (phones.clone(), Some(times.clone()))) };
    let copy = d.path().join("relabelled");
    assert_eq!(rewrite(&out, &copy, &relabel).unwrap(), (1, 1));
    assert!(copy.join("manifest.json").is_file() && copy.join("chunks").is_dir(), "the rest is copied");
    let reference = read_reference(&copy).unwrap();
    assert_eq!(reference.len(), 1);
    assert_eq!(reference[&first[0]], (phones.clone(), times.0.clone(), times.1.clone()));
    assert_eq!(ids(&copy.join("shards/shard-00001-of-00002.parquet")), second, "rows are kept");

    // A rewrite replaces the copy; phones without times are not reference phones.
    let no_times = |_: &str| -> Relabel { Some((phones.clone(), None)) };
    assert_eq!(rewrite(&out, &copy, &no_times).unwrap(), (2, 0));
    assert!(read_reference(&copy).unwrap().is_empty());
    let e = shard_files(&d.path().join("missing")).unwrap_err().to_string();
    assert!(e.starts_with("reading ") && e.ends_with("missing/shards"), "{e}");
}
