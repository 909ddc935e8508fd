//! The alignment pipeline as a library (`dv_train::alignment::align`, what
//! `dv align` and the recipe call): a segmentation model trained for a few
//! steps on the featurize output of `features.rs`, then every usable
//! utterance aligned and what is written checked against the report.

use dv_train::alignment::{align, AlignOptions, AlignmentError, Decoder, ViterbiBackend};
use dv_train::{train_threads, RunConfig};

use crate::features::{corpus, run_config};

#[test]
fn align_writes_textgrids_parquet_and_the_report_it_returns() {
    let data = tempfile::tempdir().unwrap();
    corpus(data.path());
    let run = tempfile::tempdir().unwrap();
    let cfg = RunConfig::from_toml("seg.toml", &run_config(data.path(), run.path(), 1601, 10)).unwrap();
    train_threads(&cfg, 1, &mut |_: &str| {}).unwrap();
    let ck = run.path().join("ck/step-0000000010.safetensors");
    let out = run.path().join("aligned");
    let features = data.path().display().to_string();

    let mut lines = Vec::new();
    let options = AlignOptions { batch: 1, ..AlignOptions::new(features.clone(), &ck, &out) };
    let r = align(&options, &mut |l: &str| lines.push(l.to_string())).unwrap();
    // a_hello and b_world; the loader skips the unlabelled, unknown-phone and too-short ones.
    assert_eq!((r.utterances, r.aligned, r.failed.len(), r.checkpoint_step), (2, 2, 0, 10), "{r:?}");
    assert!(r.skipped_by_loader.contains("skipped 3"), "{}", r.skipped_by_loader);
    assert!(lines[0].starts_with("aligning 2 utterances") && lines[0].contains("(step 10)"), "{lines:?}");
    assert_eq!(lines.last().unwrap().split(',').next(), Some("aligned 2/2 utterances"), "{lines:?}");
    assert_eq!((r.decoder, r.viterbi), (Decoder::Viterbi, ViterbiBackend::Cpu));
    // What `dv align` and the recipe's align stage print: no failures, no
    // reference boundaries, no plots.
    let printed = r.summary(&options);
    let printed: Vec<&str> = printed.lines().collect();
    assert_eq!(printed.len(), 7, "{printed:?}");
    assert_eq!(printed[0], "aligned        2 of 2 utterances (0 failed)");
    assert!(printed[1].starts_with("confidence     median ") && printed[2].starts_with("quarantined    "));
    assert_eq!(printed[3], "boundaries     no reference boundaries to compare with");
    // Both utterances' inner pairs decoded inside speech (the default trim_db).
    assert_eq!((r.edge_confined + r.edge_confine_overruled, r.trim_db), (2, AlignOptions::TRIM_DB), "{r:?}");
    assert!(printed[4].starts_with("edges          ") && printed[4].contains(" dB); inner pairs kept"), "{printed:?}");
    assert!(printed[5].starts_with("viterbi        ") && printed[5].ends_with(" s on the CPU"), "{printed:?}");
    assert!(printed[6].starts_with("PPER           ") && printed[6].ends_with("width 10)"), "{printed:?}");
    assert!(r.boundary_error.is_none() && r.without_reference == 2, "the fixture has no reference times");
    let pper = r.pper.as_ref().expect("PPER with the default beam");
    assert!(pper.reference_pairs >= 5 + 5 && pper.error_rate.is_finite(), "{pper:?}");

    // report.json is the report returned, its keys in name order.
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    assert_eq!(text, serde_json::to_string_pretty(&serde_json::to_value(&r).unwrap()).unwrap());
    let written: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(written["decoder"], "viterbi");
    assert_eq!(written["viterbi"], "cpu");

    // One Parquet row and one TextGrid per utterance, with the same phones covering the utterance.
    let df = dv_manifest::read_parquet(&out.join("alignments.parquet")).unwrap();
    let ids: Vec<&str> = df.column("id").unwrap().str().unwrap().iter().map(|s| s.unwrap()).collect();
    assert_eq!(ids, ["a_hello", "b_world"]);
    for (row, (id, seconds)) in [("a_hello", 0.40), ("b_world", 0.36)].into_iter().enumerate() {
        let text = std::fs::read_to_string(out.join(format!("textgrid/{id}.TextGrid"))).unwrap();
        let grid = dv_align::TextGrid::parse(&text).unwrap();
        let tier = grid.tier("phones").expect("a phones tier");
        assert_eq!(tier.intervals.first().unwrap().xmin, 0.0);
        assert!((tier.intervals.last().unwrap().xmax - seconds).abs() < 1e-9, "{id}: {}", grid.xmax);
        let phones = df.column("phones").unwrap().list().unwrap().get_as_series(row).unwrap();
        let phones: Vec<&str> = phones.str().unwrap().iter().map(|s| s.unwrap()).collect();
        let texts: Vec<&str> = tier.intervals.iter().map(|i| i.text.as_str()).collect();
        assert_eq!(texts, phones, "{id}");
        assert_eq!((phones.first(), phones.last()), (Some(&"sil"), Some(&"sil")), "{id}");
    }
    assert!(std::fs::read_to_string(out.join("quarantine.tsv")).unwrap().starts_with("id\tconfidence\n"));

    // §3.2's beam decoder, no PPER.
    let beam = AlignOptions {
        decoder: Decoder::Beam,
        beam_width: 8,
        pper_beam: 0,
        ..AlignOptions::new(features.clone(), &ck, run.path().join("beam"))
    };
    let r = align(&beam, &mut |_: &str| {}).unwrap();
    assert_eq!((r.aligned, r.decoder), (2, Decoder::Beam));
    assert!(r.pper.is_none());
    let printed = r.summary(&beam);
    let decoder = printed.lines().nth(5).unwrap_or_default();
    assert!(decoder.starts_with("decoder        beam of 8 over chained pairs: "), "{printed}");
    assert_eq!(printed.lines().count(), 6, "no PPER line: {printed}");

    // Options out of range and a missing checkpoint are errors that say what to change.
    let e = align(&AlignOptions { batch: 0, ..options.clone() }, &mut |_: &str| {}).unwrap_err();
    assert!(matches!(e, AlignmentError::Batch), "{e}");
    let e = align(&AlignOptions { trim_db: -3.0, ..options.clone() }, &mut |_: &str| {}).unwrap_err();
    assert_eq!(e.to_string(), "--trim-db -3: expected a level in dB, 0 or more");
    let e = align(&AlignOptions { plots: vec!["nope".into()], ..options.clone() }, &mut |_: &str| {}).unwrap_err();
    assert_eq!(e.to_string(), "--plot nope: no such utterance among the 2 to align");
    let missing = run.path().join("none.safetensors");
    let e = align(&AlignOptions { checkpoint: missing.clone(), ..options }, &mut |_: &str| {}).unwrap_err();
    assert_eq!(e.to_string(), format!("reading {}", missing.display()));
}
