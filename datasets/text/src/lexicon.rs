//! CMUDict: parsing, the G2P filter of Deep Voice §4.2, and word lookup.
//!
//! The file format is CMUDict's own: one pronunciation per line, `word PH1
//! PH2 …`, variants as `word(2) …`, `#` starts a comment, and a line starting
//! with `;;;` is a comment line (older releases).
//!
//! # Layout
//!
//! A [`Lexicon`] is four flat arrays: the distinct words, sorted, as one
//! string; per word, its span of that string and of the pronunciations;
//! per pronunciation, its end in one array of every phoneme. Lookup is a
//! binary search: one allocation per array, none per word. With CMUDict
//! 1.1.3 (126,052 words, 135,166 pronunciations), `dv text phonemes hello`
//! peaks 12.4 MB above `dv voices` (the inflated text and the parse's
//! scratch included), against 17.5 MB when it was a hash map of owned
//! strings and vectors (peak RSS, 2-core dev VM, dev profile; issue 42).

use std::borrow::Cow;
use std::ops::{Index, Range};
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
/// order (layout: module docs).
#[derive(Debug, Clone, Default)]
pub struct Lexicon {
    /// Every distinct word, lower case, in byte order, concatenated.
    text: String,
    /// Per word, in that order.
    entries: Vec<Entry>,
    /// Pronunciation k is `phonemes[ends[k - 1]..ends[k]]` (from 0 for k = 0).
    ends: Vec<u32>,
    phonemes: Vec<StressedPhoneme>,
    pairs: usize,
}

/// One word of a [`Lexicon`]: its text and its pronunciations.
#[derive(Debug, Clone, Copy)]
struct Entry {
    word: (u32, u32),
    prons: (u32, u32),
}

/// The pronunciations of one word ([`Lexicon::get`]), the primary one first:
/// `p[i]` is pronunciation `i`.
#[derive(Debug, Clone)]
pub struct Pronunciations<'a> {
    lexicon: &'a Lexicon,
    range: Range<u32>,
}

impl<'a> Pronunciations<'a> {
    /// Number of pronunciations (at least 1).
    pub fn len(&self) -> usize {
        self.range.len()
    }

    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// Pronunciation `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<&'a [StressedPhoneme]> {
        (i < self.len()).then(|| self.lexicon.pronunciation(self.range.start as usize + i))
    }

    /// The primary pronunciation.
    pub fn first(&self) -> Option<&'a [StressedPhoneme]> {
        self.get(0)
    }

    /// Every pronunciation, in file order.
    pub fn iter(&self) -> impl Iterator<Item = &'a [StressedPhoneme]> + 'a {
        let lexicon = self.lexicon;
        self.range.clone().map(move |k| lexicon.pronunciation(k as usize))
    }
}

impl Index<usize> for Pronunciations<'_> {
    type Output = [StressedPhoneme];

    /// Pronunciation `i`; panics past [`Pronunciations::len`], as a slice does.
    fn index(&self, i: usize) -> &[StressedPhoneme] {
        self.get(i).unwrap_or_else(|| panic!("pronunciation {i} of {}", self.len()))
    }
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
        let too_big = || TextError::MalformedLexicon {
            path: origin.to_path_buf(),
            line: 0,
            reason: "over 4 GiB of words or phonemes".into(),
        };
        // In file order: each line's word and the span of its phonemes in `phonemes`.
        // About 27 bytes a line and 6.7 phonemes a word in CMUDict: sized once.
        let mut lines: Vec<(Cow<'_, str>, Range<u32>)> = Vec::with_capacity(text.len() / 27);
        let mut phonemes: Vec<StressedPhoneme> = Vec::with_capacity(text.len() / 4);
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
            let start = phonemes.len();
            for p in fields {
                phonemes.push(p.parse::<StressedPhoneme>().map_err(|e| malformed(e.to_string()))?);
            }
            if phonemes.len() == start {
                return Err(malformed(format!("word {word:?} has no phonemes")));
            }
            let end = u32::try_from(phonemes.len()).map_err(|_| too_big())?;
            lines.push((lower(word), start as u32..end));
        }
        // Stable: a word's pronunciations stay in file order. CMUDict is
        // sorted but for two words, so this is about one pass.
        let mut order: Vec<u32> = (0..lines.len() as u32).collect();
        order.sort_by(|&a, &b| lines[a as usize].0.cmp(&lines[b as usize].0));
        let mut lex = Lexicon {
            text: String::with_capacity(text.len() / 4),
            entries: Vec::with_capacity(lines.len()),
            ends: Vec::with_capacity(lines.len()),
            phonemes: Vec::with_capacity(phonemes.len()),
            pairs: lines.len(),
        };
        let mut k = 0;
        while k < order.len() {
            let word = &lines[order[k] as usize].0;
            let first = lex.ends.len() as u32;
            while k < order.len() && lines[order[k] as usize].0 == *word {
                let span = &lines[order[k] as usize].1;
                lex.phonemes.extend_from_slice(&phonemes[span.start as usize..span.end as usize]);
                lex.ends.push(lex.phonemes.len() as u32);
                k += 1;
            }
            let at = u32::try_from(lex.text.len()).map_err(|_| too_big())?;
            lex.text.push_str(word);
            let end = u32::try_from(lex.text.len()).map_err(|_| too_big())?;
            lex.entries.push(Entry { word: (at, end), prons: (first, lex.ends.len() as u32) });
        }
        lex.text.shrink_to_fit();
        lex.entries.shrink_to_fit();
        Ok(lex)
    }

    /// Word `i` in sorted order.
    fn word(&self, i: usize) -> &str {
        let (a, b) = self.entries[i].word;
        &self.text[a as usize..b as usize]
    }

    /// Pronunciation `k` of the flat array.
    fn pronunciation(&self, k: usize) -> &[StressedPhoneme] {
        let start = if k == 0 { 0 } else { self.ends[k - 1] as usize };
        &self.phonemes[start..self.ends[k] as usize]
    }

    /// The pronunciations of word `i` in sorted order.
    fn pronunciations(&self, i: usize) -> Pronunciations<'_> {
        let (a, b) = self.entries[i].prons;
        Pronunciations { lexicon: self, range: a..b }
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
    pub fn get(&self, word: &str) -> Option<Pronunciations<'_>> {
        let key = lower(word);
        let mut range = 0..self.entries.len();
        while !range.is_empty() {
            let mid = range.start + range.len() / 2;
            match self.word(mid).cmp(&key) {
                std::cmp::Ordering::Less => range.start = mid + 1,
                std::cmp::Ordering::Greater => range.end = mid,
                std::cmp::Ordering::Equal => return Some(self.pronunciations(mid)),
            }
        }
        None
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
                Token::Word(w) => words.push((w.clone(), self.get(w).and_then(|p| p.first()).map(<[_]>::to_vec))),
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
            Some(p) => p.to_vec(),
            None => spell(word).concat(),
        }
    }

    /// The words kept by the §4.2 filter, sorted, with their one
    /// pronunciation: the G2P training pairs.
    pub fn g2p_pairs(&self) -> Vec<(&str, &[StressedPhoneme])> {
        (0..self.len())
            .map(|i| (self.word(i), self.pronunciations(i)))
            .filter(|(w, p)| g2p_keeps(w, p.len()))
            .filter_map(|(w, p)| Some((w, p.first()?)))
            .collect()
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
        for (w, p) in (0..self.len()).map(|i| (self.word(i), self.pronunciations(i))) {
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

/// The lexicon's key of `word`: lower case. CMUDict 1.1.3 is lower case
/// already, so no Unicode case mapping (and no allocation) then.
fn lower(word: &str) -> Cow<'_, str> {
    if word.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        Cow::Borrowed(word)
    } else {
        Cow::Owned(word.to_lowercase())
    }
}
