//! Text → sentences of stressed phonemes (Deep Voice §2, inference):
//! normalization, the lexicon's first pronunciation, the package's G2P model
//! for words the lexicon lacks.
//!
//! Each sentence (ended by `. ! ?`, or cut at a short pause past
//! [`MAX_SENTENCE_WORDS`] words by [`dv_text::Normalized::sentences`]) is
//! framed by silence, and a short pause (comma, colon, …) becomes one
//! silence phoneme, as festival's labels of the embedded corpus have them.
//! A word the lexicon lacks goes to the G2P model (§3.1, beam search at the
//! package's width); without one, every such word is collected into one
//! [`SpeakError::OutOfVocabulary`].
//!
//! Acronyms: a [`Token::Acronym`] (capitals that could read as a word,
//! `NASA`) is read as a word when the lexicon has it and spelled letter by
//! letter otherwise, never guessed by the G2P model
//! ([`dv_text::Lexicon::acronym`]); [`Token::Letters`] (`FBI`, `PhD`,
//! `U.S.`) are spelled, each letter by its CMUDict name ([`dv_text::spell`])
//! and counted as a word of its own.

use std::ops::Range;

use dv_synth::G2p;
use dv_text::{normalize, spell, Lexicon, Phoneme, Stress, StressedPhoneme, Token, MAX_SENTENCE_WORDS};

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
    let normalized = normalize(text);
    for tokens in normalized.sentences(MAX_SENTENCE_WORDS) {
        let mut cur = Pronounced { phonemes: vec![sil], words: Vec::new() };
        let word = |cur: &mut Pronounced, w: &str, p: &[StressedPhoneme]| {
            let start = cur.phonemes.len();
            cur.phonemes.extend_from_slice(p);
            cur.words.push((w.to_string(), start..cur.phonemes.len()));
        };
        for t in tokens {
            match t {
                Token::Word(w) => match (lexicon.get(w).and_then(|p| p.first()), g2p) {
                    (Some(p), _) => word(&mut cur, w, p),
                    (None, Some(g)) => word(&mut cur, w, &g2p_word(g, w)?),
                    (None, None) => {
                        oov.push(w.clone());
                        word(&mut cur, w, &[]);
                    }
                },
                Token::Acronym(a) => word(&mut cur, a, &lexicon.acronym(a)),
                Token::Letters(l) => {
                    for (c, p) in l.chars().zip(spell(l)) {
                        word(&mut cur, c.encode_utf8(&mut [0; 4]), &p);
                    }
                }
                Token::Pause(_) => {
                    if cur.phonemes.last() != Some(&sil) {
                        cur.phonemes.push(sil);
                    }
                }
            }
        }
        if !cur.words.is_empty() {
            if cur.phonemes.last() != Some(&sil) {
                cur.phonemes.push(sil);
            }
            out.push(cur);
        }
    }
    if !oov.is_empty() {
        return Err(SpeakError::OutOfVocabulary { words: oov });
    }
    Ok(out)
}
