//! Text → sentences of stressed phonemes (Deep Voice §2, inference):
//! normalization, the lexicon's first pronunciation, the package's G2P model
//! for words the lexicon lacks.
//!
//! Each sentence (ended by `. ! ?`) is framed by silence, and a short pause
//! (comma, colon, …) becomes one silence phoneme, as festival's labels of
//! the embedded corpus have them. A word the lexicon lacks goes to the G2P
//! model (§3.1, beam search at the package's width); without one, every
//! such word is collected into one [`SpeakError::OutOfVocabulary`].

use std::ops::Range;

use dv_synth::G2p;
use dv_text::{normalize, Lexicon, Pause, Phoneme, Stress, StressedPhoneme, Token};

use crate::error::SpeakError;

/// A phoneme and stress from their indices (the G2P's output), or `None`
/// for indices outside the inventory.
pub fn stressed(phoneme: usize, stress: usize) -> Option<StressedPhoneme> {
    let s = char::from_digit(u32::try_from(stress).ok()?, 10).and_then(Stress::from_digit)?;
    Some(StressedPhoneme::new(*Phoneme::ALL.get(phoneme)?, s))
}

/// A word's pronunciation by the voice's G2P model (beam search at the
/// package's width).
pub fn g2p_word(g2p: &G2p, word: &str) -> Result<Vec<StressedPhoneme>, SpeakError> {
    let (pairs, _) = g2p.beam(word, g2p.config().beam)?;
    pairs
        .into_iter()
        .map(|(p, s)| {
            stressed(p, s).ok_or_else(|| SpeakError::BadPronunciation { word: word.to_string(), phoneme: p, stress: s })
        })
        .collect()
}

/// One sentence's phonemes, silences included, and each word with the
/// range of `phonemes` that pronounces it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pronounced {
    pub phonemes: Vec<StressedPhoneme>,
    pub words: Vec<(String, Range<usize>)>,
}

impl Pronounced {
    /// The words joined by spaces.
    pub fn text(&self) -> String {
        self.words.iter().map(|(w, _)| w.as_str()).collect::<Vec<_>>().join(" ")
    }
}

/// Phoneme sequences per sentence, silences added (module docs). Text with
/// no word gives no sentence (not an error here).
pub fn pronounce(text: &str, lexicon: &Lexicon, g2p: Option<&G2p>) -> Result<Vec<Pronounced>, SpeakError> {
    let sil = StressedPhoneme::new(Phoneme::Sil, Stress::None);
    let mut out = Vec::new();
    let mut oov = Vec::new();
    let fresh = || Pronounced { phonemes: vec![sil], words: Vec::new() };
    let mut cur = fresh();
    let finish = |cur: &mut Pronounced, out: &mut Vec<Pronounced>| {
        if !cur.words.is_empty() {
            if cur.phonemes.last() != Some(&sil) {
                cur.phonemes.push(sil);
            }
            out.push(std::mem::replace(cur, fresh()));
        }
    };
    for t in normalize(text).tokens {
        match t {
            Token::Word(w) => {
                let start = cur.phonemes.len();
                match (lexicon.get(&w).and_then(|p| p.first()), g2p) {
                    (Some(p), _) => cur.phonemes.extend(p.iter().copied()),
                    (None, Some(g)) => cur.phonemes.extend(g2p_word(g, &w)?),
                    (None, None) => oov.push(w.clone()),
                }
                let end = cur.phonemes.len();
                cur.words.push((w, start..end));
            }
            Token::Pause(Pause::Short) => {
                if cur.phonemes.last() != Some(&sil) {
                    cur.phonemes.push(sil);
                }
            }
            Token::Pause(Pause::Long) => finish(&mut cur, &mut out),
        }
    }
    finish(&mut cur, &mut out);
    if !oov.is_empty() {
        return Err(SpeakError::OutOfVocabulary { words: oov });
    }
    Ok(out)
}
