//! CMUDict: parsing, the G2P filter of Deep Voice §4.2, and word lookup.
//!
//! The file format is CMUDict's own: one pronunciation per line, `word PH1
//! PH2 …`, variants as `word(2) …`, `#` starts a comment, and a line starting
//! with `;;;` is a comment line (older releases).

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::path::Path;

use crate::{spell, Normalized, StressedPhoneme, TextError, Token};

/// One pronunciation: phonemes with CMUDict stress.
pub type Pronunciation = Vec<StressedPhoneme>;

/// Counts of the G2P filter of §4.2: "We strip out all words that do not
/// start with a letter, contain numbers, or have multiple pronunciations,
/// which leaves 124,978 out of the original 133,854 grapheme-phoneme sequence
/// pairs."
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct G2pFilterStats {
    /// Grapheme-phoneme pairs in the file (every pronunciation line).
    pub pairs: usize,
    /// Distinct words.
    pub words: usize,
    /// Pairs left after the filter (one per kept word).
    pub kept: usize,
    /// Words dropped because they do not start with a letter.
    pub not_letter_start: usize,
    /// Words dropped because they contain a digit.
    pub with_digit: usize,
    /// Words dropped because they have more than one pronunciation.
    pub multiple_pronunciations: usize,
}

/// A pronouncing dictionary: every word with all its pronunciations, in file
/// order.
#[derive(Debug, Clone, Default)]
pub struct Lexicon {
    entries: HashMap<String, Vec<Pronunciation>>,
    pairs: usize,
}

/// The result of looking up a normalized text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lookup {
    /// The first pronunciation of every word found, in text order, `None` for
    /// a word the lexicon lacks.
    pub words: Vec<(String, Option<Pronunciation>)>,
}

impl Lookup {
    /// The words the lexicon lacks, in text order (repeats included).
    pub fn oov(&self) -> impl Iterator<Item = &str> {
        self.words.iter().filter(|(_, p)| p.is_none()).map(|(w, _)| w.as_str())
    }
}

impl Lexicon {
    /// Reads a CMUDict-format file.
    pub fn load(path: &Path) -> Result<Lexicon, TextError> {
        let bytes = std::fs::read(path).map_err(|source| TextError::Io { path: path.to_path_buf(), source })?;
        // CMUDict is ASCII with a few Latin-1 bytes in older releases.
        let text = String::from_utf8_lossy(&bytes);
        Self::parse(&text, path)
    }

    /// Parses CMUDict text; `origin` only names the source in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Lexicon, TextError> {
        // About 27 bytes a line in CMUDict: the map is sized once.
        let mut lex = Lexicon { entries: HashMap::with_capacity(text.len() / 27), pairs: 0 };
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() || line.starts_with(";;;") {
                continue;
            }
            let malformed =
                |reason: String| TextError::MalformedLexicon { path: origin.to_path_buf(), line: i + 1, reason };
            let mut fields = line.split_whitespace();
            let head = fields.next().unwrap_or("");
            let word = match head.rfind('(') {
                Some(k) if head.ends_with(')') && head[k + 1..head.len() - 1].chars().all(|c| c.is_ascii_digit()) => {
                    &head[..k]
                }
                _ => head,
            };
            let pron: Pronunciation = fields
                .map(|p| p.parse::<StressedPhoneme>())
                .collect::<Result<_, _>>()
                .map_err(|e| malformed(e.to_string()))?;
            if pron.is_empty() {
                return Err(malformed(format!("word {word:?} has no phonemes")));
            }
            // CMUDict 1.1.3 is lower case already: no Unicode case mapping then.
            let key = if word.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
                word.to_string()
            } else {
                word.to_lowercase()
            };
            match lex.entries.entry(key) {
                Entry::Occupied(e) => e.into_mut().push(pron),
                // Room for exactly one: most words have one pronunciation.
                Entry::Vacant(e) => {
                    e.insert(vec![pron]);
                }
            }
            lex.pairs += 1;
        }
        Ok(lex)
    }

    /// Number of distinct words.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of grapheme-phoneme pairs (pronunciation lines) read.
    pub fn pairs(&self) -> usize {
        self.pairs
    }

    /// All pronunciations of a word (case-insensitive), first the primary one.
    pub fn get(&self, word: &str) -> Option<&[Pronunciation]> {
        self.entries.get(&word.to_lowercase()).map(Vec::as_slice)
    }

    /// Whether the word is in the lexicon.
    pub fn contains(&self, word: &str) -> bool {
        self.get(word).is_some()
    }

    /// Looks up every word of a normalized text: a word by its first
    /// pronunciation, an acronym by [`Lexicon::acronym`], spelled letters
    /// one word each by name ([`crate::spell`]).
    pub fn lookup(&self, text: &Normalized) -> Lookup {
        let mut words = Vec::new();
        for t in &text.tokens {
            match t {
                Token::Word(w) => words.push((w.clone(), self.get(w).and_then(|p| p.first().cloned()))),
                Token::Acronym(a) => words.push((a.clone(), Some(self.acronym(a)))),
                Token::Letters(l) => words.extend(l.chars().map(String::from).zip(spell(l).into_iter().map(Some))),
                Token::Pause(_) => {}
            }
        }
        Lookup { words }
    }

    /// An acronym ([`Token::Acronym`]) read as a word when the lexicon has
    /// it (its first pronunciation: `nasa`, and `cia` as CMUDict spells
    /// it), else spelled letter by letter ([`crate::spell`], joined).
    pub fn acronym(&self, word: &str) -> Pronunciation {
        match self.get(word).and_then(|p| p.first()) {
            Some(p) => p.clone(),
            None => spell(word).concat(),
        }
    }

    /// The words kept by the §4.2 filter, sorted, with their one
    /// pronunciation: the G2P training pairs.
    pub fn g2p_pairs(&self) -> Vec<(&str, &Pronunciation)> {
        let mut kept: Vec<_> =
            self.entries.iter().filter(|(w, p)| g2p_keeps(w, p.len())).map(|(w, p)| (w.as_str(), &p[0])).collect();
        kept.sort_unstable_by(|a, b| a.0.cmp(b.0));
        kept
    }

    /// The counts of the §4.2 filter. A word failing several tests is counted
    /// under the first that fails, in the order of the fields.
    pub fn g2p_filter_stats(&self) -> G2pFilterStats {
        let mut s = G2pFilterStats {
            pairs: self.pairs,
            words: self.entries.len(),
            kept: 0,
            not_letter_start: 0,
            with_digit: 0,
            multiple_pronunciations: 0,
        };
        for (w, p) in &self.entries {
            if !w.chars().next().is_some_and(|c| c.is_alphabetic()) {
                s.not_letter_start += 1;
            } else if w.chars().any(|c| c.is_ascii_digit()) {
                s.with_digit += 1;
            } else if p.len() > 1 {
                s.multiple_pronunciations += 1;
            } else {
                s.kept += 1;
            }
        }
        s
    }
}

fn g2p_keeps(word: &str, pronunciations: usize) -> bool {
    word.chars().next().is_some_and(|c| c.is_alphabetic())
        && !word.chars().any(|c| c.is_ascii_digit())
        && pronunciations == 1
}
