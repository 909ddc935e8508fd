use std::collections::HashSet;
use std::path::Path;

use dv_corpus::embedded::sentences::{is_plain, shuffle};
use dv_corpus::embedded::{make, parse_hts_durations, Request, Tools};
use dv_corpus::{read, CorpusError, CorpusKind};

fn lexicon(words: &str) -> HashSet<String> {
    words.split_whitespace().map(str::to_string).collect()
}

#[test]
fn sentence_filter_keeps_plain_english_only() {
    let lex = lexicon("the cat sat on mat and a dog ran far away i saw it");
    assert!(is_plain("The cat sat on the mat.", &lex));
    assert!(is_plain("I saw the cat, and it ran away!", &lex));
    assert!(!is_plain("The cat sat.", &lex), "fewer than five words");
    assert!(!is_plain("the cat sat on the mat.", &lex), "no capital");
    assert!(!is_plain("The cat sat on the mat", &lex), "no final mark");
    assert!(!is_plain("The cat sat on the zebra.", &lex), "word outside the lexicon");
    assert!(!is_plain("The cat's mat and the dog.", &lex), "apostrophe");
    assert!(!is_plain("The cat sat on 2 mats.", &lex), "digit");
    assert!(!is_plain("The CAT sat on the mat.", &lex), "all-capital word");
    assert!(!is_plain("The cat sat on the mat,.", &lex), "stacked punctuation");
    assert!(!is_plain("The cat sat. On the mat and a dog.", &lex), "two sentences");
    let long = format!("The {}cat.", "cat ".repeat(19));
    assert!(!is_plain(&long, &lex), "more than twenty words");
}

#[test]
fn hts_durations_parse_to_phones_and_a_bad_line_is_named_by_file_and_number() {
    let path = Path::new("out/dur/a0001.dur");
    let spans = parse_hts_durations(path, "0 1000000 x^x-pau+hh=ax\n\n1000000 2500000 x^pau-hh+ax=l\n").unwrap();
    let phones: Vec<&str> = spans.iter().map(|s| s.phone.as_str()).collect();
    assert_eq!(phones, ["sil", "HH"]);
    let times: Vec<f64> = spans.iter().flat_map(|s| [s.start, s.end]).collect();
    for (got, want) in times.iter().zip([0.0, 0.1, 0.1, 0.25]) {
        assert!((got - want).abs() < 1e-12, "{times:?}");
    }
    for (text, line, says) in [
        ("0 1000000 x^x-pau+hh=ax\n0 1000000\n", 2, "not `start end label`: \"0 1000000\""),
        ("0 ten x^x-pau+hh=ax\n", 1, "not `start end label`"),
        ("0 1 no-phone-marks\n", 1, "not `start end label`"),
        ("0 1 x^x-zz+hh=ax\n", 1, "zz"),
    ] {
        match parse_hts_durations(path, text) {
            Err(e @ CorpusError::Durations { .. }) => {
                let CorpusError::Durations { path: p, line: l, .. } = &e else { unreachable!() };
                assert_eq!((p.as_path(), *l), (path, line), "{text:?}");
                let msg = e.to_string();
                assert!(msg.starts_with(&format!("out/dur/a0001.dur: line {line}: ")) && msg.contains(says), "{msg}");
            }
            other => panic!("{text:?}: expected a durations error, got {other:?}"),
        }
    }
}

#[test]
fn shuffle_is_fixed_by_its_seed() {
    let mut a: Vec<u32> = (0..100).collect();
    let mut b = a.clone();
    shuffle(&mut a, 2017);
    shuffle(&mut b, 2017);
    assert_eq!(a, b);
    assert_ne!(a, (0..100).collect::<Vec<u32>>());
    let mut c: Vec<u32> = (0..100).collect();
    shuffle(&mut c, 7);
    assert_ne!(a, c);
    let mut sorted = a.clone();
    sorted.sort();
    assert_eq!(sorted, (0..100).collect::<Vec<u32>>());
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for sub in ["etc", "wav", "lab", "f0", "hts"] {
        let mut names: Vec<_> = std::fs::read_dir(dir.join(sub)).unwrap().map(|e| e.unwrap().path()).collect();
        names.sort();
        for p in names {
            out.push((p.strip_prefix(dir).unwrap().display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
    out
}

/// Renders a four-utterance corpus twice with the real Debian tools (the
/// test command installs them) and checks it is byte-identical, readable by
/// the ARCTIC reader, and that its labels agree with its audio.
#[test]
fn embedded_corpus_is_deterministic_and_has_exact_labels() {
    let d = tempfile::tempdir().unwrap();
    let req = |out: &str| Request {
        out: d.path().join(out),
        utterances: 4,
        seed: 2017,
        jobs: 2,
        labels_only: false,
        tools: Tools::default(),
    };
    let mut calls = Vec::new();
    let a = make(&req("a"), &mut |done, total| calls.push((done, total)))
        .expect("the recipe's Debian packages are installed");
    assert!(!a.reused && a.utterances == 4 && a.sentences_available > 4000, "{a:?}");
    assert_eq!(calls.last(), Some(&(4, 4)));
    let b = make(&req("b"), &mut |_, _| {}).unwrap();
    assert_eq!(files(&d.path().join("a")), files(&d.path().join("b")), "two runs give identical files");
    let again = make(&req("a"), &mut |_, _| {}).unwrap();
    assert!(again.reused);
    assert!((again.audio_seconds - a.audio_seconds).abs() < 1e-9 && (b.audio_seconds - a.audio_seconds).abs() < 1e-9);
    assert!(!d.path().join("a.partial").exists());

    // Labels on one machine, audio on another: the render step needs only
    // hts_engine, sox and the voice, and gives the same files.
    let labels = make(&Request { labels_only: true, ..req("split") }, &mut |_, _| {}).unwrap();
    assert_eq!(labels.labels.as_deref(), Some(d.path().join("split.partial").as_path()));
    assert!(!d.path().join("split.partial/wav").exists() && !d.path().join("split").exists());
    let gone = Tools {
        festival: "/nonexistent/festival".into(),
        lexicon: "/nonexistent/cmudict".into(),
        fortunes: "/nonexistent/fortunes".into(),
        ..Tools::default()
    };
    let rendered = make(&Request { tools: gone.clone(), ..req("split") }, &mut |_, _| {}).unwrap();
    assert_eq!(rendered.utterances, 4);
    assert_eq!(files(&d.path().join("a")), files(&d.path().join("split")), "labels-then-render equals one run");
    let missing = make(&Request { tools: gone, ..req("fresh") }, &mut |_, _| {}).unwrap_err();
    assert!(missing.to_string().contains("/nonexistent/festival"), "{missing}");

    let c = read(d.path().join("a").to_str().unwrap(), None).unwrap();
    assert_eq!(c.kind, CorpusKind::Arctic);
    assert!(c.bad.is_empty(), "{:?}", c.bad);
    assert_eq!(c.utterances.len(), 4);
    for u in &c.utterances {
        assert_eq!((u.sample_rate, u.channels), (16_000, 1));
        let r = u.reference.as_ref().expect("labels and F0");
        let first = r.phones.first().unwrap();
        let last = r.phones.last().unwrap();
        assert_eq!((first.phone.as_str(), first.start, last.phone.as_str()), ("sil", 0.0, "sil"));
        assert!(
            (last.end - u.duration).abs() < 0.002,
            "{}: labels end at {} s, audio lasts {} s",
            u.id,
            last.end,
            u.duration
        );
        let f0 = r.f0.as_ref().unwrap();
        assert!((f0.hz.len() as f64 * f0.step - u.duration).abs() < 0.002, "{}: F0 frames cover the audio", u.id);
        let voiced: Vec<f32> = f0.hz.iter().copied().filter(|v| *v > 0.0).collect();
        assert!(voiced.len() > f0.hz.len() / 4, "{}: speech is mostly voiced", u.id);
        assert!(voiced.iter().all(|v| (100.0..400.0).contains(v)), "{}: slt's F0 lies in 100–400 Hz", u.id);
        for w in r.phones.windows(2) {
            assert_eq!(w[0].end, w[1].start);
            assert!(w[1].end > w[1].start);
        }
    }
}
