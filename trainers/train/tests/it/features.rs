//! `[data] kind = "features"`: a featurize output directory written here
//! with polars, read back as phoneme-pair CTC examples, split, batched and
//! trained on.

use std::path::Path;

use dv_text::{Phoneme, PhonemePair, Stress};
use dv_torch::tch::Device;
use dv_train::{
    ctc_min_frames, is_validation, merged_phones, pair_labels, restressed, train_threads, Dataset, Features, FeaturesConfig, RunConfig, Skipped,
};
use polars::prelude::*;

/// One row of a shard: id, frames, reference phones (None: null).
struct Utt {
    id: String,
    frames: usize,
    phones: Option<Vec<&'static str>>,
}

fn utt(id: &str, frames: usize, phones: Option<&[&'static str]>) -> Utt {
    Utt { id: id.into(), frames, phones: phones.map(|p| p.to_vec()) }
}

/// Learnable MFCCs: frame `k` belongs to phone `k * n / frames`, whose
/// 20 values are a fixed pattern of the phone's position plus a little
/// ripple.
fn mfcc(u: &Utt) -> Vec<f32> {
    let n = u.phones.as_ref().map_or(1, |p| p.len().max(1));
    let mut out = Vec::with_capacity(u.frames * 20);
    for k in 0..u.frames {
        let phone = (k * n / u.frames.max(1)) as f32;
        for j in 0..20 {
            out.push(((phone + 1.0) * (j as f32 + 1.0) * 0.37).sin() + 0.01 * ((k * 7 + j) % 5) as f32);
        }
    }
    out
}

fn write_shard(path: &Path, utts: &[Utt]) {
    let list = |name: &str, inner: DataType, ca: ListChunked| {
        ca.into_series().cast(&DataType::List(Box::new(inner))).unwrap().with_name(name.into()).into_column()
    };
    let mfccs: ListChunked = utts.iter().map(|u| Some(Series::new(PlSmallStr::EMPTY, mfcc(u)))).collect();
    let phones: ListChunked = utts
        .iter()
        .map(|u| {
            u.phones
                .as_ref()
                .map(|p| Series::new(PlSmallStr::EMPTY, p.iter().map(|s| s.to_string()).collect::<Vec<_>>()))
        })
        .collect();
    let mut df = DataFrame::new(
        utts.len(),
        vec![
            Column::new("id".into(), utts.iter().map(|u| u.id.as_str()).collect::<Vec<_>>()),
            Column::new("duration".into(), utts.iter().map(|u| u.frames as f64 * 0.01).collect::<Vec<f64>>()),
            list("mfcc", DataType::Float32, mfccs),
            Column::new("mfcc_frames".into(), utts.iter().map(|u| u.frames as u32).collect::<Vec<u32>>()),
            list("ref_phones", DataType::String, phones),
        ],
    )
    .unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    ParquetWriter::new(std::fs::File::create(path).unwrap()).finish(&mut df).unwrap();
}

const HELLO: &[&str] = &["pau", "hh", "eh", "l", "ow", "pau"];
const WORLD: &[&str] = &["h#", "W", "ER1", "L", "D", "sil", "pau"];

/// Two shards: two good utterances, one with no reference phones, one with
/// an unknown phone, one too short for CTC.
pub(crate) fn corpus(dir: &Path) {
    let shards = dir.join("shards");
    write_shard(
        &shards.join("shard-00000-of-00002.parquet"),
        &[utt("b_world", 36, Some(WORLD)), utt("c_unlabelled", 30, None), utt("e_short", 4, Some(HELLO))],
    );
    write_shard(
        &shards.join("shard-00001-of-00002.parquet"),
        &[utt("a_hello", 40, Some(HELLO)), utt("d_unknown", 30, Some(&["pau", "xq", "pau"]))],
    );
    std::fs::write(dir.join("manifest.json"), "{}").unwrap();
}

fn features_config(dir: &Path, validation_fraction: f64) -> FeaturesConfig {
    FeaturesConfig { url: format!("file://{}", dir.display()), validation_fraction, seed: 7, max_frames: None }
}

fn pair(a: Phoneme, b: Phoneme) -> i64 {
    PhonemePair(a, b).index() as i64 + 1
}

#[test]
fn a_featurize_output_loads_with_each_skip_counted() {
    let d = tempfile::tempdir().unwrap();
    corpus(d.path());
    let split = Features::load(&features_config(d.path(), 0.0)).unwrap();
    assert_eq!(split.shards, 2);
    assert!(split.complete);
    assert_eq!(split.train.len(), 2);
    assert_eq!(split.validation.len(), 0);
    assert_eq!(split.train.ids(), ["a_hello", "b_world"]);
    assert_eq!(
        split.skipped,
        Skipped { no_reference: 1, unknown_phone: 1, too_short_for_ctc: 1, ..Default::default() }
    );
    let shown = split.skipped.to_string();
    assert!(shown.contains("skipped 3") && shown.contains("unknown phone 1"), "{shown}");

    use Phoneme::*;
    // §3.2: `sil HH EH L OW sil` -> (sil,HH) (HH,EH) (EH,L) (L,OW) (OW,sil).
    let hello = [pair(Sil, Hh), pair(Hh, Eh), pair(Eh, L), pair(L, Ow), pair(Ow, Sil)];
    assert_eq!(split.train.labels(0).unwrap(), hello);
    // `h#` is silence, stress is dropped, `sil pau` merge into one silence.
    let world = [pair(Sil, W), pair(W, Er), pair(Er, L), pair(L, D), pair(D, Sil)];
    assert_eq!(split.train.labels(1).unwrap(), world);

    // max_frames skips the 40-frame utterance.
    let capped = Features::load(&FeaturesConfig { max_frames: Some(38), ..features_config(d.path(), 0.0) }).unwrap();
    assert_eq!(capped.train.ids(), ["b_world"]);
    assert_eq!(capped.skipped.over_max_frames, 1);
}

#[test]
fn labels_add_end_silences_merge_runs_and_reject_unknown_phones() {
    use Phoneme::*;
    assert_eq!(pair_labels(&["k", "ae", "t"]).unwrap(), [pair(Sil, K), pair(K, Ae), pair(Ae, T), pair(T, Sil)]);
    assert_eq!(
        pair_labels(&["pau", "ssil", "ax", "pau", "brth", "b", "h#"]).unwrap(),
        [pair(Sil, Ah), pair(Ah, Sil), pair(Sil, B), pair(B, Sil)]
    );
    assert!(pair_labels(&["pau", "zz", "pau"]).is_err());
    // Equal neighbours need a blank between them.
    assert_eq!(ctc_min_frames(&[3, 3, 4, 3]), 5);
    assert_eq!(ctc_min_frames(&[]), 0);
}

#[test]
fn stress_rides_through_merging_and_onto_the_decoded_phones() {
    use Phoneme::*;
    // CMUDict's digits are stress, not part of a pair label.
    assert_eq!(pair_labels(&["HH", "AH0", "L", "OW1"]).unwrap(), pair_labels(&["hh", "ah", "l", "ow"]).unwrap());
    let merged = merged_phones(&["sil", "HH", "AH0", "L", "OW1", "sil", "sil", "W", "ER1", "L", "D"]).unwrap();
    let names: Vec<String> = merged.iter().map(|p| p.to_string()).collect();
    assert_eq!(names, ["sil", "HH", "AH0", "L", "OW1", "sil", "W", "ER1", "L", "D", "sil"]);
    assert_eq!(merged[4].stress, Stress::Primary);
    // The decoder's phonemes take the reference's stress in order; one it added keeps its bare name.
    let decoded = [Sil, Hh, Ah, L, Ow, Sil, W, Er, L, D, Sil];
    assert_eq!(restressed(&decoded, &merged), names);
    let fewer = [Sil, Hh, Ah, L, Ow, W, Er, Ah, L, D, Sil];
    let got = restressed(&fewer, &merged);
    assert_eq!(got, ["sil", "HH", "AH0", "L", "OW1", "W", "ER1", "AH", "L", "D", "sil"]);
}

#[test]
fn a_missing_directory_or_object_store_url_is_an_error_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let e = Features::load(&features_config(&d.path().join("nowhere"), 0.0)).unwrap_err().to_string();
    assert!(e.contains("nowhere") && e.contains("shards"), "{e}");
    std::fs::create_dir_all(d.path().join("shards")).unwrap();
    let e = Features::load(&features_config(d.path(), 0.0)).unwrap_err().to_string();
    assert!(e.contains("no *.parquet shards"), "{e}");
    let e = Features::load(&FeaturesConfig { url: "s3://bucket/features".into(), ..features_config(d.path(), 0.0) })
        .unwrap_err()
        .to_string();
    assert!(e.contains("s3://bucket/features") && e.contains("local"), "{e}");
}

#[test]
fn a_batch_pads_to_its_longest_utterance() {
    let d = tempfile::tempdir().unwrap();
    corpus(d.path());
    let split = Features::load(&features_config(d.path(), 0.0)).unwrap();
    let b = split.train.batch(&[1, 0], Device::Cpu).unwrap();
    assert_eq!(b.inputs.size(), [2, 40, 20]);
    assert_eq!(b.input_lengths, [36, 40]);
    assert_eq!(b.target_lengths, [5, 5]);
    assert_eq!(b.example_ids, [1, 0]);
    let targets = Vec::<i64>::try_from(&b.targets).unwrap();
    let want: Vec<i64> = [split.train.labels(1).unwrap(), split.train.labels(0).unwrap()].concat();
    assert_eq!(targets, want);
    assert!((b.audio_seconds.unwrap() - 0.76).abs() < 1e-9);
    // b_world's frames are its MFCCs, then zeros past frame 36.
    let x = Vec::<f32>::try_from(&b.inputs.reshape([-1])).unwrap();
    let first = mfcc(&utt("b_world", 36, Some(WORLD)));
    assert_eq!(&x[..36 * 20], first.as_slice());
    assert!(x[36 * 20..40 * 20].iter().all(|&v| v == 0.0));
    assert!(x[40 * 20 + 39 * 20..].iter().any(|&v| v != 0.0));
    assert!(split.train.batch(&[2], Device::Cpu).is_err());
}

#[test]
fn the_validation_split_is_deterministic_and_disjoint() {
    let d = tempfile::tempdir().unwrap();
    let utts: Vec<Utt> = (0..200).map(|i| utt(&format!("u{i:03}"), 30, Some(HELLO))).collect();
    let (a, b) = utts.split_at(77);
    write_shard(&d.path().join("shards/shard-00000-of-00002.parquet"), a);
    write_shard(&d.path().join("shards/shard-00001-of-00002.parquet"), b);
    let cfg = features_config(d.path(), 0.3);
    let one = Features::load(&cfg).unwrap();
    let two = Features::load(&cfg).unwrap();
    assert!(!one.complete);
    assert_eq!(one.train.ids(), two.train.ids());
    assert_eq!(one.validation.ids(), two.validation.ids());
    assert_eq!(one.train.len() + one.validation.len(), 200);
    assert!(one.validation.ids().iter().all(|id| !one.train.ids().contains(id)));
    // Roughly the fraction, and exactly the documented hash.
    assert!((40..=80).contains(&one.validation.len()), "{} held out", one.validation.len());
    assert!(one.validation.ids().iter().all(|id| is_validation(id, 7, 0.3)));
    assert!(one.train.ids().iter().all(|id| !is_validation(id, 7, 0.3)));
    // Another seed, another split.
    let other = Features::load(&FeaturesConfig { seed: 8, ..cfg }).unwrap();
    assert_ne!(other.validation.ids(), one.validation.ids());
}

pub(crate) fn run_config(features: &Path, run: &Path, classes: i64, steps: u64) -> String {
    format!(
        r#"
[model]
kind = "segmentation"

[model.sizes]
mfcc = 20
conv_channels = 4
kernel_freq = 9
kernel_time = 5
gru = 16
gru_layers = 1
classes = {classes}
dropout = 0.0

[data]
kind = "features"
url = "{url}"
validation_fraction = 0.0
seed = 1

[optimizer]
lr = 1e-2
clip_norm = 10.0

[schedule]
rate = 0.9
every = 100

[train]
steps = {steps}
batch = 2
seed = 5
log_every = 1
threads_per_rank = 1

[checkpoint]
url = "{ck}"
every = 1000
keep_last = 1

[tracking]
jsonl = "{jsonl}"
"#,
        url = features.display(),
        ck = run.join("ck").display(),
        jsonl = run.join("metrics.jsonl").display(),
    )
}

#[test]
fn features_data_needs_1601_classes_and_known_keys() {
    let d = tempfile::tempdir().unwrap();
    let e = RunConfig::from_toml("seg.toml", &run_config(d.path(), d.path(), 17, 5)).unwrap_err().to_string();
    assert!(e.contains("seg.toml") && e.contains("classes") && e.contains("1601"), "{e}");
    let text = run_config(d.path(), d.path(), 1601, 5).replace("seed = 1\n", "seed = 1\nshuffle = true\n");
    let e = RunConfig::from_toml("seg.toml", &text).unwrap_err().to_string();
    assert!(e.contains("seg.toml") && e.contains("shuffle"), "{e}");
    let text = run_config(d.path(), d.path(), 1601, 5).replace("fraction = 0.0", "fraction = 1.0");
    let e = RunConfig::from_toml("seg.toml", &text).unwrap_err().to_string();
    assert!(e.contains("validation_fraction"), "{e}");
    // A good config round-trips.
    let paper = run_config(d.path(), d.path(), 1601, 5);
    let cfg = RunConfig::from_toml("seg.toml", &paper).unwrap();
    assert_eq!(RunConfig::from_toml("again.toml", &cfg.to_toml().unwrap()).unwrap(), cfg);
}

#[test]
fn the_segmentation_model_overfits_two_featurized_utterances() {
    let data = tempfile::tempdir().unwrap();
    corpus(data.path());
    let run = tempfile::tempdir().unwrap();
    let cfg = RunConfig::from_toml("seg.toml", &run_config(data.path(), run.path(), 1601, 30)).unwrap();
    let mut lines = Vec::new();
    let s = train_threads(&cfg, 1, &mut |l: &str| lines.push(l.to_string())).unwrap();
    assert_eq!(s.steps, 30);
    let skipped = lines.iter().find(|l| l.contains("skipped")).expect("a line with the skip counts");
    assert!(
        skipped.contains("2 training utterances")
            && skipped.contains("skipped 3")
            && skipped.contains("too short for CTC 1"),
        "{skipped}"
    );
    let l = crate::run::losses(&run.path().join("metrics.jsonl"));
    assert_eq!(l.len(), 30);
    assert!(l.iter().all(|(_, v)| v.is_finite()), "{l:?}");
    assert!(l[29].1 < 0.5 * l[0].1, "loss {} -> {}", l[0].1, l[29].1);

    // One batch of 4 cannot be drawn from 2 usable utterances.
    let text = run_config(data.path(), run.path(), 1601, 30).replace("batch = 2", "batch = 4");
    let e =
        train_threads(&RunConfig::from_toml("seg.toml", &text).unwrap(), 1, &mut |_: &str| {}).unwrap_err().to_string();
    assert!(e.contains("2 usable training utterances"), "{e}");
}

#[test]
fn the_example_config_for_the_embedded_corpus_validates() {
    let path = format!(
        "{}/configs/segmentation-embedded.toml",
        std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR")
    );
    let cfg = RunConfig::load(&path).unwrap();
    let dv_train::DataConfig::Features(f) = &cfg.data else { panic!("{:?} is not features data", cfg.data) };
    assert_eq!(f.url, "features/cmu_us_slt_fortunes_300");
    assert_eq!(cfg.segmentation_sizes(&path).unwrap().classes, 1601);
}

#[test]
fn reference_boundaries_follow_the_merged_phones() {
    use dv_train::reference_boundaries;
    // pau pau hh eh l ow pau: the two leading silences merge; 6 merged phones, 5 boundaries.
    let phones = ["pau", "pau", "hh", "eh", "l", "ow", "pau"];
    let starts = [0.0, 0.10, 0.20, 0.30, 0.42, 0.50, 0.70];
    let ends = [0.10, 0.20, 0.30, 0.40, 0.50, 0.70, 0.90];
    let b = reference_boundaries(&phones, &starts, &ends).unwrap();
    // A gap between eh (ends 0.40) and l (starts 0.42) puts the boundary in its middle.
    let want = [0.20, 0.30, 0.41, 0.50, 0.70];
    assert_eq!(b.len(), want.len());
    for (x, w) in b.iter().zip(want) {
        assert!((x - w).abs() < 1e-12, "{b:?}");
    }
    assert_eq!(b.len(), dv_train::pair_labels(&phones).unwrap().len());
    // No leading silence: pair_labels adds one, which has no time.
    assert_eq!(reference_boundaries(&phones[2..], &starts[2..], &ends[2..]), None);
    // Counts that do not match, or a time running backwards.
    assert_eq!(reference_boundaries(&phones, &starts[1..], &ends), None);
    let mut bad = ends;
    bad[3] = 0.25;
    assert_eq!(reference_boundaries(&phones, &starts, &bad), None);
}
