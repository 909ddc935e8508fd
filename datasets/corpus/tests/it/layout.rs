use std::collections::BTreeMap;

use dv_corpus::{detect, read, BadReason, Corpus, CorpusError, CorpusKind};

use crate::fixture::{empty_wav, flac, mulaw_wav, truncated_wav, wav, write};

fn reasons(c: &Corpus) -> BTreeMap<String, BadReason> {
    c.bad.iter().map(|b| (b.item.clone(), b.reason)).collect()
}

fn ids(c: &Corpus) -> Vec<&str> {
    c.utterances.iter().map(|u| u.id.as_str()).collect()
}

#[test]
fn ljspeech_reads_good_rows_and_reports_each_bad_one() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    let mut meta = Vec::new();
    meta.extend_from_slice(b"LJ001-0001|Printing, in the only sense \"with which\" we are at present concerned.|Printing, in the only sense \"with which\" we are at present concerned.\r\n");
    meta.extend_from_slice(b"LJ001-0002|In 1843 he paid $5.|In eighteen forty-three he paid five dollars.\n");
    meta.extend_from_slice(b"LJ001-0003|Missing audio here.|Missing audio here.\n");
    meta.extend_from_slice(b"LJ001-0004|   |   \n");
    meta.extend_from_slice(b"LJ001-0005|Caf\xe9 in Latin-1|Caf\xe9\n");
    meta.extend_from_slice(b"LJ001-0001|A duplicate id.|A duplicate id.\n");
    meta.extend_from_slice(b"no pipe on this line\n");
    meta.extend_from_slice(b"LJ001-0006|Truncated.|Truncated.\n");
    meta.extend_from_slice(b"LJ001-0007|Zero length.|Zero length.\n");
    meta.extend_from_slice(b"LJ001-0008|Mu-law.|Mu-law.\n");
    meta.extend_from_slice(b"\n");
    write(&r.join("metadata.csv"), meta);
    for id in ["LJ001-0001", "LJ001-0002", "LJ001-0004", "LJ001-0005"] {
        wav(&r.join(format!("wavs/{id}.wav")), 22_050, 22_050);
    }
    truncated_wav(&r.join("wavs/LJ001-0006.wav"));
    empty_wav(&r.join("wavs/LJ001-0007.wav"));
    mulaw_wav(&r.join("wavs/LJ001-0008.wav"));

    let c = read(r.to_str().unwrap(), None).unwrap();
    assert_eq!(c.kind, CorpusKind::LjSpeech);
    assert_eq!(ids(&c), ["LJ001-0001", "LJ001-0002"]);
    let u = &c.utterances[1];
    assert_eq!(u.speaker, "LJ");
    assert_eq!(u.transcript, "In 1843 he paid $5.");
    assert_eq!(
        u.normalized, "in eighteen forty three he paid five dollars.",
        "normalized from LJSpeech's own third column"
    );
    assert_eq!((u.sample_rate, u.samples, u.channels), (22_050, 22_050, 1));
    assert!((u.duration - 1.0).abs() < 1e-12);
    assert!(c.utterances[0].transcript.contains("\"with which\""), "quotes are text, not CSV quoting");
    let want: BTreeMap<String, BadReason> = [
        ("LJ001-0003", BadReason::MissingAudio),
        ("LJ001-0004", BadReason::EmptyTranscript),
        ("LJ001-0005", BadReason::NonUtf8Transcript),
        ("LJ001-0001", BadReason::DuplicateId),
        ("line 7", BadReason::MalformedIndex),
        ("LJ001-0006", BadReason::TruncatedAudio),
        ("LJ001-0007", BadReason::EmptyAudio),
        ("LJ001-0008", BadReason::UnsupportedAudio),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(reasons(&c), want);
    let missing = c.bad.iter().find(|b| b.reason == BadReason::MissingAudio).unwrap();
    assert!(missing.file.ends_with("wavs/LJ001-0003.wav"), "the report names the file: {missing:?}");
}

#[test]
fn arctic_reads_prompts_labels_and_f0() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("cmu_us_xyz_arctic");
    write(
        &r.join("etc/txt.done.data"),
        "( arctic_a0001 \"Author of the danger trail, Philip Steels, etc.\" )\n\
         ( arctic_a0002 \"He said \\\"no\\\" twice.\" )\n\
         this line is not a prompt\n\
         ( arctic_a0003 \"Audio is missing.\" )\n\
         ( arctic_a0004 \"Bad labels, good audio.\" )\n",
    );
    for id in ["arctic_a0001", "arctic_a0002", "arctic_a0004"] {
        wav(&r.join(format!("wav/{id}.wav")), 16_000, 8_000);
    }
    write(
        &r.join("lab/arctic_a0001.lab"),
        "separator ;\nnfields 1\n#\n0.100000 125 pau\n0.200000 125 ao ; score 1\n0.350000 125 ax\n0.500000 125 pau\n",
    );
    write(&r.join("lab/arctic_a0004.lab"), "#\n0.1 125 pau\n0.05 125 ao\n");
    write(
        &r.join("f0/arctic_a0001.f0"),
        "EST_File Track\nDataType ascii\nNumFrames 3\nEST_Header_End\n0.0025 0 0\n0.0075 1 120.5\n0.0125 1 121.0\n",
    );

    let c = read(r.to_str().unwrap(), None).unwrap();
    assert_eq!(c.kind, CorpusKind::Arctic);
    assert_eq!(ids(&c), ["arctic_a0001", "arctic_a0002", "arctic_a0004"]);
    assert_eq!(c.utterances[0].speaker, "xyz");
    assert_eq!(c.utterances[1].transcript, "He said \"no\" twice.");
    let reference = c.utterances[0].reference.as_ref().unwrap();
    let phones: Vec<&str> = reference.phones.iter().map(|p| p.phone.as_str()).collect();
    assert_eq!(phones, ["sil", "AO", "AH", "sil"]);
    assert_eq!((reference.phones[1].start, reference.phones[1].end), (0.1, 0.2));
    let f0 = reference.f0.as_ref().unwrap();
    assert_eq!(f0.hz, [0.0, 120.5, 121.0]);
    assert!((f0.step - 0.005).abs() < 1e-12 && (f0.start - 0.0025).abs() < 1e-12);
    assert!(c.utterances[1].reference.is_none());
    assert!(c.utterances[2].reference.is_none(), "labels that do not parse are left out");
    let want: BTreeMap<String, BadReason> = [
        ("line 3", BadReason::MalformedIndex),
        ("arctic_a0003", BadReason::MissingAudio),
        ("arctic_a0004", BadReason::MalformedLabels),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(reasons(&c), want);
}

#[test]
fn blizzard2013_reads_prompts_gui_blocks() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("BC2013");
    let seg = r.join("train/segmented");
    write(
        &seg.join("prompts.gui"),
        "CA-BB-01-01\n\
         Black Beauty , by Anna Sewell @ | # .\n\
         markup line one\n\
         CA-BB-01-02\n\
         The first place that I can well remember was a large pleasant meadow .\n\
         markup line two\n\
         stray text that is not an id\n\
         CA-BB-01-03\n\
         It 's missing its audio .\n\
         markup\n\
         CA-BB-01-04\n\
         # @ |\n\
         markup\n",
    );
    for id in ["CA-BB-01-01", "CA-BB-01-02", "CA-BB-01-04"] {
        wav(&seg.join(format!("wavn/{id}.wav")), 16_000, 4_000);
    }
    let (kind, dir) = detect(&r).unwrap();
    assert_eq!((kind, dir.clone()), (CorpusKind::Blizzard2013, seg.clone()));
    let c = read(r.to_str().unwrap(), None).unwrap();
    assert_eq!(ids(&c), ["CA-BB-01-01", "CA-BB-01-02"]);
    assert_eq!(c.utterances[0].transcript, "Black Beauty, by Anna Sewell.");
    assert_eq!(c.utterances[0].speaker, "blizzard2013");
    assert_eq!(c.utterances[1].normalized, "the first place that i can well remember was a large pleasant meadow.");
    let want: BTreeMap<String, BadReason> = [
        ("line 7", BadReason::MalformedIndex),
        ("CA-BB-01-03", BadReason::MissingAudio),
        ("CA-BB-01-04", BadReason::EmptyTranscript),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(reasons(&c), want);
}

#[test]
fn vctk_092_reads_mic1_flac_and_reports_orphans() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    write(&r.join("txt/p225/p225_001.txt"), "Please call Stella.\n");
    write(&r.join("txt/p225/p225_002.txt"), "Ask her to bring these things.\n");
    write(&r.join("txt/p226/p226_001.txt"), b"\xff\xfe bad bytes\n");
    write(
        &r.join("speaker-info.txt"),
        "ID  AGE  GENDER  ACCENTS  REGION COMMENTS\np225  23  F    English    Southern  England\n",
    );
    flac(&r.join("wav48_silence_trimmed/p225/p225_001_mic1.flac"));
    flac(&r.join("wav48_silence_trimmed/p225/p225_001_mic2.flac"));
    flac(&r.join("wav48_silence_trimmed/p226/p226_001_mic1.flac"));
    flac(&r.join("wav48_silence_trimmed/p315/p315_001_mic1.flac"));
    let c = read(r.to_str().unwrap(), None).unwrap();
    assert_eq!(c.kind, CorpusKind::Vctk);
    assert_eq!(ids(&c), ["p225_001"]);
    let u = &c.utterances[0];
    assert_eq!((u.speaker.as_str(), u.sample_rate, u.samples), ("p225", 16_000, 4000));
    assert!(u.audio.ends_with("p225_001_mic1.flac"));
    let want: BTreeMap<String, BadReason> = [
        ("p225_002", BadReason::MissingAudio),
        ("p226_001", BadReason::NonUtf8Transcript),
        ("p315_001", BadReason::MissingTranscript),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(reasons(&c), want);
}

#[test]
fn vctk_original_reads_wav48() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    write(&r.join("txt/p225/p225_001.txt"), "Please call Stella.");
    wav(&r.join("wav48/p225/p225_001.wav"), 48_000, 48_000);
    wav(&r.join("wav48/p315/p315_001.wav"), 48_000, 48_000);
    let c = read(r.to_str().unwrap(), None).unwrap();
    assert_eq!(ids(&c), ["p225_001"]);
    assert_eq!(c.utterances[0].sample_rate, 48_000);
    assert_eq!(reasons(&c).get("p315_001"), Some(&BadReason::MissingTranscript));
}

#[test]
fn tables_read_tsv_with_header_csv_with_quotes_and_positional_rows() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    wav(&r.join("audio/a.wav"), 16_000, 1600);
    wav(&r.join("audio/b.wav"), 24_000, 2400);
    write(&r.join("list.tsv"), "speaker\ttext\tpath\nann\tHello \"there\".\taudio/a.wav\nbob\tMissing.\taudio/none.wav\n\tNo speaker.\taudio/b.wav\n");
    let c = read(r.join("list.tsv").to_str().unwrap(), None).unwrap();
    assert_eq!(c.kind, CorpusKind::Table);
    assert_eq!(ids(&c), ["a", "b"], "file names are the ids when no two files share one");
    assert_eq!(c.utterances[0].speaker, "ann");
    assert_eq!(c.utterances[0].transcript, "Hello \"there\".");
    assert_eq!(c.utterances[1].speaker, "default");
    assert_eq!(reasons(&c).get("none"), Some(&BadReason::MissingAudio));

    write(&r.join("list.csv"), "audio/a.wav,\"Hello, world\",ann\naudio/b.wav\naudio/a.wav,Again,ann\n");
    let c = read(r.join("list.csv").to_str().unwrap(), None).unwrap();
    assert_eq!(ids(&c), ["a"]);
    assert_eq!(c.utterances[0].transcript, "Hello, world");
    let want: BTreeMap<String, BadReason> = [("line 2", BadReason::MalformedIndex), ("a", BadReason::DuplicateId)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert_eq!(reasons(&c), want);
}

/// What a spreadsheet or a hand-written index gets wrong, refused row by
/// row with the line and the reason rather than read as other text: a
/// `|` in an LJSpeech transcript, unquoted commas in a `.csv` text, and a
/// byte order mark before the first id.
#[test]
fn rows_that_would_cut_a_transcript_short_are_refused_and_a_bom_is_not_an_id() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    for id in ["my001", "my002", "my003"] {
        wav(&r.join(format!("wavs/{id}.wav")), 16_000, 1600);
    }
    write(&r.join("metadata.csv"), "\u{feff}my001|Hello.|Hello.\nmy002|a|b|c|extra column\nmy003|Two columns.|\n");
    let c = read(r.to_str().unwrap(), None).unwrap();
    assert_eq!(ids(&c), ["my001", "my003"]);
    let bad = c.bad.iter().find(|b| b.item == "line 2").unwrap();
    assert_eq!(bad.reason, BadReason::MalformedIndex);
    assert!(bad.detail.contains("5 fields"), "{}", bad.detail);

    let t = d.path().join("t");
    wav(&t.join("a.wav"), 16_000, 1600);
    wav(&t.join("b.wav"), 16_000, 1600);
    wav(&t.join("c.wav"), 16_000, 1600);
    write(
        &t.join("plain.csv"),
        "a.wav,Turn left, then right.\nb.wav,\"Turn left, then right.\"\nc.wav,Stop here,ann,,\nc.wav,Yes, sir\n",
    );
    let c = read(t.join("plain.csv").to_str().unwrap(), None).unwrap();
    assert_eq!(ids(&c), ["b", "c"], "a spreadsheet's empty trailing fields are no fields");
    assert!(c.bad.iter().any(|b| b.item == "line 4" && b.detail.contains("\"sir\"")), "{:?}", c.bad);
    assert_eq!(c.utterances[0].transcript, "Turn left, then right.");
    assert_eq!(c.utterances[1].speaker, "ann");
    let bad = c.bad.iter().find(|b| b.item == "line 1").unwrap();
    assert!(bad.detail.contains("\"then right.\"") && bad.detail.contains("quote a text"), "{}", bad.detail);
    write(&t.join("head.csv"), "path,text\na.wav,Turn left, then right.\nb.wav,Fine.\n");
    let c = read(t.join("head.csv").to_str().unwrap(), None).unwrap();
    assert_eq!(ids(&c), ["b"]);
    let bad = c.bad.iter().find(|b| b.item == "line 2").unwrap();
    assert!(bad.detail.contains("3 fields, more than the 2 columns"), "{}", bad.detail);
    // With a header, a speaker may be several words.
    write(&t.join("named.csv"), "path,text,speaker\na.wav,Fine.,Ann Lee\n");
    let c = read(t.join("named.csv").to_str().unwrap(), None).unwrap();
    assert_eq!(c.utterances[0].speaker, "Ann Lee");
}

#[test]
fn table_ids_are_file_names_unless_two_files_share_one() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    wav(&r.join("ann/001.wav"), 16_000, 1600);
    wav(&r.join("bob/001.wav"), 16_000, 1600);
    wav(&r.join("bob/002.flac.wav"), 16_000, 1600);
    write(&r.join("list.tsv"), "ann/001.wav\tOne.\n./bob/001.wav\tTwo.\nbob/002.flac.wav\tThree.\n");
    let c = read(r.join("list.tsv").to_str().unwrap(), None).unwrap();
    // 001 names two files: every id is then the relative path, no `/` in it
    assert_eq!(ids(&c), ["ann-001", "bob-001", "bob-002.flac"]);
    write(&r.join("one.tsv"), "bob/001.wav\tTwo.\nbob/002.flac.wav\tThree.\n");
    let c = read(r.join("one.tsv").to_str().unwrap(), None).unwrap();
    assert_eq!(ids(&c), ["001", "002.flac"]);
}

#[test]
fn detection_and_whole_corpus_errors() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    assert!(matches!(read(r.join("nope").to_str().unwrap(), None), Err(CorpusError::NotFound { .. })));
    let err = read(r.to_str().unwrap(), None).unwrap_err();
    assert!(matches!(err, CorpusError::Unrecognized { .. }) && err.to_string().contains("metadata.csv"), "{err}");
    let err = read("s3://bucket/corpus", None).unwrap_err();
    assert!(matches!(err, CorpusError::UnsupportedUrl { .. }), "{err}");
    write(&r.join("metadata.csv"), "LJ1|Hi there.|Hi there.\n");
    wav(&r.join("wavs/LJ1.wav"), 22_050, 100);
    let url = format!("file://{}", r.display());
    assert_eq!(read(&url, None).unwrap().utterances.len(), 1);
    assert_eq!(read(r.to_str().unwrap(), Some(CorpusKind::LjSpeech)).unwrap().utterances.len(), 1);
    let err = read(r.to_str().unwrap(), Some(CorpusKind::Arctic)).unwrap_err();
    assert!(matches!(err, CorpusError::WrongLayout { .. }), "{err}");
    assert_eq!("VCTK".parse::<CorpusKind>().unwrap(), CorpusKind::Vctk);
    assert!("wav2vec".parse::<CorpusKind>().is_err());
}
