//! Text → sentences: words, phonemes and times from the duration model.

use dv_speak::{SpeakError, Speaker, SpeakerOptions, PAUSE};
use dv_synth::DurationModel;
use dv_text::{Phoneme, StressedPhoneme};

use crate::{save_package, speaker, text_voice, TEXT};

const FIRST: [&str; 18] =
    ["pau", "HH", "AH0", "L", "OW1", "W", "ER1", "L", "D", "pau", "G", "UH1", "D", "S", "P", "IY1", "CH", "pau"];

#[test]
fn plan_splits_sentences_and_pronounces_words() {
    let d = tempfile::tempdir().unwrap();
    let s = speaker(d.path());
    let plan = s.plan(TEXT, 1.0).unwrap();
    assert_eq!(plan.len(), 2);
    assert_eq!(plan[0].text, "hello world good speech");
    assert_eq!(plan[1].text, "bye now");
    let words: Vec<&str> = plan[0].words.iter().map(|w| w.word.as_str()).collect();
    assert_eq!(words, ["hello", "world", "good", "speech"]);
    let phonemes: Vec<&str> = plan[0].phonemes.iter().map(|p| p.phoneme.as_str()).collect();
    assert_eq!(phonemes, FIRST);
    let second: Vec<&str> = plan[1].phonemes.iter().map(|p| p.phoneme.as_str()).collect();
    assert_eq!(second, ["pau", "B", "AY1", "N", "AW1", "pau"]);
    assert_eq!((plan[0].index(), plan[1].index()), (0, 1));
}

#[test]
fn timings_are_the_duration_models_and_tile_the_sentence() {
    let d = tempfile::tempdir().unwrap();
    let s = speaker(d.path());
    let model = DurationModel::new(s.voice()).unwrap();
    for sentence in s.plan(TEXT, 1.0).unwrap() {
        let inputs: Vec<(usize, usize)> = sentence
            .phonemes
            .iter()
            .map(|p| {
                let sp: StressedPhoneme =
                    if p.phoneme == PAUSE { "sil".parse().unwrap() } else { p.phoneme.parse().unwrap() };
                (sp.phoneme.index(), sp.stress.index())
            })
            .collect();
        let want = model.predict(&inputs).unwrap();
        let ph = &sentence.phonemes;
        assert_eq!(ph[0].start_s, 0.0);
        for (k, p) in ph.iter().enumerate() {
            let d = p.end_s - p.start_s;
            assert!((d - want[k].duration_s).abs() < 1e-12, "{k}: {d} s, the model says {}", want[k].duration_s);
            assert!(d > 0.04 && d < 0.13, "{k}: {d} s is not a speech-like duration");
            if k > 0 {
                assert_eq!(p.start_s, ph[k - 1].end_s, "phoneme {k} does not start where {} ends", k - 1);
            }
        }
        assert_eq!(ph.last().unwrap().end_s, sentence.duration_s);
        // A word spans exactly its phonemes: from its first to its last.
        let mut k = 1;
        for w in &sentence.words {
            let n = match w.word.as_str() {
                "hello" | "world" | "speech" => 4,
                "good" => 3,
                _ => 2,
            };
            if ph[k].phoneme == PAUSE {
                k += 1; // the short pause between "world" and "good"
            }
            assert_eq!((w.start_s, w.end_s), (ph[k].start_s, ph[k + n - 1].end_s), "{}", w.word);
            k += n;
        }
        assert!(sentence.words.windows(2).all(|w| w[0].end_s <= w[1].start_s));
    }
    assert_eq!(Phoneme::Sil.symbol(), "sil");
}

#[test]
fn speed_two_halves_every_duration() {
    let d = tempfile::tempdir().unwrap();
    let s = speaker(d.path());
    let normal = s.plan(TEXT, 1.0).unwrap();
    let fast = s.plan(TEXT, 2.0).unwrap();
    let slow = s.plan(TEXT, 0.5).unwrap();
    for ((n, f), sl) in normal.iter().zip(&fast).zip(&slow) {
        assert!((f.duration_s - n.duration_s / 2.0).abs() < 1e-12, "{} vs {}", f.duration_s, n.duration_s);
        assert!((sl.duration_s - n.duration_s * 2.0).abs() < 1e-12);
        for (a, b) in n.words.iter().zip(&f.words) {
            assert!((b.end_s - a.end_s / 2.0).abs() < 1e-12, "{}", a.word);
        }
        // Half the audio, to a frame.
        assert!(f.samples().abs_diff(n.samples() / 2) <= 64, "{} vs {}", f.samples(), n.samples());
    }
    for bad in [0.1, 4.5, f32::NAN, -1.0] {
        assert!(matches!(s.plan(TEXT, bad), Err(SpeakError::BadOption { what: "speed", .. })), "{bad}");
    }
}

#[test]
fn text_without_words_is_nothing_to_say() {
    let d = tempfile::tempdir().unwrap();
    let s = speaker(d.path());
    for text in ["", "   ", "...", "?! -- ;", "\"()\"", "\u{2014}"] {
        let r = s.plan(text, 1.0);
        assert!(matches!(r, Err(SpeakError::NothingToSay)), "{text:?}: {r:?}");
    }
}

#[test]
fn unknown_words_without_g2p_are_named() {
    let d = tempfile::tempdir().unwrap();
    let s = speaker(d.path());
    match s.plan("Hello zxqvbnm world. Qqq!", 1.0) {
        Err(e @ SpeakError::OutOfVocabulary { .. }) => {
            let SpeakError::OutOfVocabulary { words } = &e else { unreachable!() };
            assert_eq!(words, &["zxqvbnm", "qqq"]);
            assert!(e.to_string().contains("zxqvbnm qqq"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_g2p_model_pronounces_unknown_words() {
    let d = tempfile::tempdir().unwrap();
    let voice = text_voice(Some(dv_voice::G2pConfig::new(8, 12, 1, 40, 5)), 6);
    save_package(&voice, d.path(), true);
    let s = Speaker::load(d.path(), &SpeakerOptions::default()).unwrap();
    let g = s.parity().g2p.expect("G2P golden words are checked");
    assert_eq!((g.differ, g.words), (0, dv_synth::random::GOLDEN_WORDS.len()));
    let plan = s.plan("hello zxqvbnm", 1.0).unwrap();
    let w = &plan[0].words[1];
    assert_eq!(w.word, "zxqvbnm");
    let want = dv_speak::g2p_word(&dv_synth::G2p::new(s.voice()).unwrap(), "zxqvbnm").unwrap();
    let got: Vec<&str> = plan[0].phonemes[5..5 + want.len()].iter().map(|p| p.phoneme.as_str()).collect();
    let want: Vec<String> =
        want.iter().map(|p| if p.phoneme == Phoneme::Sil { PAUSE.into() } else { p.to_string() }).collect();
    assert_eq!(got, want);
    assert!(w.end_s >= w.start_s && w.start_s == plan[0].words[0].end_s);
}

#[test]
fn the_packages_lexicon_comes_before_the_options() {
    let d = tempfile::tempdir().unwrap();
    save_package(&text_voice(None, 5), d.path(), true);
    let other = d.path().join("other.dict");
    std::fs::write(&other, "zebra Z IY1 B R AH0\n").unwrap();
    let options = SpeakerOptions { lexicon: Some(other.clone()), ..SpeakerOptions::default() };
    let s = Speaker::load(d.path(), &options).unwrap();
    assert_eq!(s.lexicon_path(), Some(d.path().join(dv_speak::LEXICON_FILE).as_path()));
    assert!(matches!(s.plan("zebra", 1.0), Err(SpeakError::OutOfVocabulary { .. })));
    std::fs::remove_file(d.path().join(dv_speak::LEXICON_FILE)).unwrap();
    let s = Speaker::load(d.path(), &options).unwrap();
    assert_eq!(s.lexicon_path(), Some(other.as_path()));
    assert_eq!(s.plan("zebra", 1.0).unwrap()[0].phonemes.len(), 7);
    assert!(matches!(s.plan("hello", 1.0), Err(SpeakError::OutOfVocabulary { .. })));
    // A missing lexicon file is an error naming it.
    let gone = SpeakerOptions { lexicon: Some(d.path().join("gone.dict")), ..SpeakerOptions::default() };
    let e = Speaker::load(d.path(), &gone).err().expect("a missing lexicon is refused");
    assert!(e.to_string().contains("gone.dict"), "{e}");
}
