//! Integration tests of dv-manifest: the schema, Parquet round trips and
//! summaries.

use std::path::{Path, PathBuf};

use dv_corpus::{BadItem, BadReason, F0Track, PhoneSpan, ReferenceLabels, Utterance};
use dv_manifest::{
    bad_items_frame, read_parquet, schema, utterances_frame, utterances_from_frame, write_parquet, Summary,
};
use dv_text::Lexicon;

fn utt(
    id: &str,
    speaker: &str,
    rate: u32,
    duration: f64,
    normalized: &str,
    reference: Option<ReferenceLabels>,
) -> Utterance {
    Utterance {
        id: id.into(),
        speaker: speaker.into(),
        audio: format!("/data/{id}.wav"),
        transcript: normalized.to_uppercase(),
        normalized: normalized.into(),
        sample_rate: rate,
        channels: 1,
        samples: (duration * rate as f64) as u64,
        duration,
        reference,
    }
}

fn sample() -> Vec<Utterance> {
    let labels = ReferenceLabels {
        phones: vec![
            PhoneSpan { phone: "sil".into(), start: 0.0, end: 0.1 },
            PhoneSpan { phone: "HH".into(), start: 0.1, end: 0.25 },
        ],
        f0: Some(F0Track { start: 0.0025, step: 0.005, hz: vec![0.0, 110.5, 111.25] }),
    };
    let f0_only = ReferenceLabels { phones: vec![], f0: Some(F0Track { start: 0.0, step: 0.01, hz: vec![200.0] }) };
    vec![
        utt("a", "ann", 16_000, 0.5, "hello world.", Some(labels)),
        utt("b", "ann", 22_050, 3.0, "hello, zyzzx.", None),
        utt("c", "bob", 16_000, 9.5, "world world", Some(f0_only)),
    ]
}

#[test]
fn frame_has_the_documented_schema() {
    let df = utterances_frame(&sample()).unwrap();
    assert_eq!(df.height(), 3);
    let got: Vec<(String, String)> = df.schema().iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    let want: Vec<(String, String)> = schema().iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    assert_eq!(got, want);
    assert_eq!(want.len(), 15);
    let empty = utterances_frame(&[]).unwrap();
    assert_eq!((empty.height(), empty.width()), (0, 15));
}

#[test]
fn parquet_round_trip_keeps_every_field() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("sub/manifest.parquet");
    let utts = sample();
    let mut df = utterances_frame(&utts).unwrap();
    write_parquet(&mut df, &path).unwrap();
    assert!(!path.with_extension("parquet.partial").exists(), "no temporary file left");
    let back = utterances_from_frame(&read_parquet(&path).unwrap()).unwrap();
    assert_eq!(back, utts);
}

#[test]
fn foreign_parquet_is_a_schema_error_naming_the_column() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("bad.parquet");
    let mut df = bad_items_frame(&[]).unwrap();
    write_parquet(&mut df, &path).unwrap();
    let err = utterances_from_frame(&read_parquet(&path).unwrap()).unwrap_err();
    assert!(err.to_string().starts_with("id: column missing"), "{err}");
    let missing = read_parquet(Path::new("/nonexistent/x.parquet")).unwrap_err();
    assert!(missing.to_string().contains("/nonexistent/x.parquet"));
}

#[test]
fn bad_item_report_round_trips() {
    let bad = vec![BadItem {
        item: "x".into(),
        file: PathBuf::from("/c/x.wav"),
        reason: BadReason::TruncatedAudio,
        detail: "cut".into(),
    }];
    let df = bad_items_frame(&bad).unwrap();
    assert_eq!(df.column("reason").unwrap().str().unwrap().get(0), Some("truncated_audio"));
    assert_eq!(df.column("file").unwrap().str().unwrap().get(0), Some("/c/x.wav"));
}

#[test]
fn summary_counts_what_it_says() {
    let lex = Lexicon::parse("hello HH AH0 L OW1\nworld W ER1 L D\n", Path::new("t.dict")).unwrap();
    let bad = vec![
        BadItem { item: "x".into(), file: "f".into(), reason: BadReason::MissingAudio, detail: String::new() },
        BadItem { item: "y".into(), file: "f".into(), reason: BadReason::MissingAudio, detail: String::new() },
        BadItem { item: "z".into(), file: "f".into(), reason: BadReason::DuplicateId, detail: String::new() },
    ];
    let s = Summary::of(&sample(), &bad, Some(&lex));
    assert_eq!(s.utterances, 3);
    assert!((s.hours - 13.0 / 3600.0).abs() < 1e-12);
    assert_eq!(s.speakers.get("ann"), Some(&2));
    assert_eq!(s.speakers.get("bob"), Some(&1));
    assert_eq!(s.sample_rates.get(&16_000), Some(&2));
    assert_eq!((s.min_duration, s.max_duration), (0.5, 9.5));
    assert!((s.mean_duration - 13.0 / 3.0).abs() < 1e-12);
    let counts: Vec<usize> = s.histogram.iter().map(|b| b.count).collect();
    assert_eq!(counts, [1, 0, 1, 0, 1], "bins 0-1, 1-2, 2-4, 4-8, 8-12; empty tail bins trimmed");
    assert_eq!(s.histogram.last().unwrap().hi, 12.0);
    assert_eq!((s.with_phones, s.with_f0), (1, 2));
    let oov = s.oov.as_ref().unwrap();
    assert_eq!((oov.tokens, oov.oov_tokens, oov.types, oov.oov_types), (6, 1, 3, 1));
    assert_eq!(oov.top, [("zyzzx".to_string(), 1)]);
    assert_eq!(s.bad.get(&BadReason::MissingAudio), Some(&2));
    assert_eq!(s.bad.get(&BadReason::DuplicateId), Some(&1));
    let shown = s.to_string();
    assert!(
        shown.contains("utterances     3")
            && shown.contains("16.67% of 6 word tokens")
            && shown.contains("missing_audio"),
        "{shown}"
    );
    let none = Summary::of(&[], &[], None);
    assert_eq!((none.utterances, none.min_duration, none.oov.is_none()), (0, 0.0, true));
}
