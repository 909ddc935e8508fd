//! The front end on natural text: acronyms, spelled letters, numbers,
//! long sentences, and text with nothing to say.

use std::path::Path;

use dv_speak::{pronounce, Pronounced, SpeakError, Speaker, SpeakerOptions};
use dv_text::Lexicon;

use crate::{save_package, text_voice};

const LEXICON: &str = "\
the DH AH0
and AH0 N D
nasa N AE1 S AH0
forty F AO1 R T IY0
two T UW1
a AH0
word W ER1 D
";

fn lexicon() -> Lexicon {
    Lexicon::parse(LEXICON, Path::new("test.dict")).unwrap()
}

fn phonemes(p: &Pronounced) -> Vec<String> {
    p.phonemes.iter().map(|p| if p.phoneme == dv_text::Phoneme::Sil { "pau".into() } else { p.to_string() }).collect()
}

fn word_phonemes(p: &Pronounced, word: usize) -> String {
    let (_, r) = &p.words[word];
    p.phonemes[r.clone()].iter().map(ToString::to_string).collect::<Vec<_>>().join(" ")
}

#[test]
fn acronyms_in_the_lexicon_are_words_others_are_spelled() {
    let s = pronounce("The NASA and FBI.", &lexicon(), None).unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].text(), "the nasa and f b i");
    assert_eq!(word_phonemes(&s[0], 1), "N AE1 S AH0");
    // Each letter by its CMUDict name, secondary stress but the last.
    assert_eq!(word_phonemes(&s[0], 3), "EH2 F");
    assert_eq!(word_phonemes(&s[0], 4), "B IY2");
    assert_eq!(word_phonemes(&s[0], 5), "AY1");
    assert_eq!(phonemes(&s[0]).first().map(String::as_str), Some("pau"));
    assert_eq!(phonemes(&s[0]).last().map(String::as_str), Some("pau"));
}

#[test]
fn an_acronym_missing_from_the_lexicon_is_spelled_not_out_of_vocabulary() {
    // No G2P model: a word the lexicon lacks would be an error, an acronym
    // is spelled.
    let s = pronounce("the NATO and a PhD", &lexicon(), None).unwrap();
    assert_eq!(s[0].text(), "the nato and a p h d");
    assert_eq!(word_phonemes(&s[0], 1), "EH2 N EY2 T IY2 OW1");
    // The article `a` keeps its lexicon reading; the letter is EY.
    assert_eq!(word_phonemes(&s[0], 3), "AH0");
    assert_eq!(word_phonemes(&s[0], 4), "P IY2");
    let e = pronounce("the Nato", &lexicon(), None).unwrap_err();
    assert!(matches!(e, SpeakError::OutOfVocabulary { ref words } if words == &["nato"]), "{e}");
}

#[test]
fn am_and_pm_are_letters() {
    let lex = Lexicon::parse("two T UW1\n", Path::new("t.dict")).unwrap();
    let s = pronounce("2 pm", &lex, None).unwrap();
    assert_eq!(s[0].text(), "two p m");
    assert_eq!(phonemes(&s[0]), ["pau", "T", "UW1", "P", "IY2", "EH1", "M", "pau"]);
}

#[test]
fn long_sentences_are_split_at_a_short_pause() {
    // 12 clauses of 5 words, commas between: 60 words in one sentence.
    let clause = "the word and the word";
    let text = [clause; 12].join(", ") + ".";
    let s = pronounce(&text, &lexicon(), None).unwrap();
    let lens: Vec<usize> = s.iter().map(|p| p.words.len()).collect();
    assert_eq!(lens, [40, 20], "cut at the comma after 40 words");
    for p in &s {
        let ph = phonemes(p);
        assert_eq!((ph[0].as_str(), ph[ph.len() - 1].as_str()), ("pau", "pau"));
        assert!(ph.windows(2).all(|w| !(w[0] == "pau" && w[1] == "pau")), "no double silence");
    }
    // No pause at all: cut at 40 words.
    let text = ["word"; 90].join(" ");
    let lens: Vec<usize> = pronounce(&text, &lexicon(), None).unwrap().iter().map(|p| p.words.len()).collect();
    assert_eq!(lens, [40, 40, 10]);
}

#[test]
fn digits_are_speakable() {
    let s = pronounce("42", &lexicon(), None).unwrap();
    assert_eq!(s[0].text(), "forty two");
}

#[test]
fn text_without_letters_or_digits_is_nothing_to_say() {
    let d = tempfile::tempdir().unwrap();
    save_package(&text_voice(None, 5), d.path(), false);
    std::fs::write(d.path().join(dv_speak::LEXICON_FILE), LEXICON).unwrap();
    let s = Speaker::load(d.path(), &SpeakerOptions::default()).unwrap();
    for text in ["!!!", "...", "\u{1f600}\u{1f389}", "\u{2026} \u{2014} ?!", "* ~ ^", "\u{65e5}\u{672c}"] {
        match s.plan(text, 1.0) {
            Err(e @ SpeakError::NothingToSay) => {
                assert!(e.to_string().starts_with("nothing to say"), "{e}");
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
    let plan = s.plan("42!!!", 1.0).unwrap();
    assert_eq!(plan.len(), 1);
    assert_eq!(plan[0].text, "forty two");
    // A long text is planned sentence by sentence, none over the limit.
    let plan = s.plan(&["word"; 90].join(" "), 1.0).unwrap();
    assert_eq!(plan.iter().map(|p| p.words.len()).collect::<Vec<_>>(), [40, 40, 10]);
    assert_eq!(plan.iter().map(|p| p.index()).collect::<Vec<_>>(), [0, 1, 2]);
}
