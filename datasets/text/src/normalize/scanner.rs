//! The scanner: one pass over the transliterated text, dispatching on the
//! character at hand; words, abbreviations and punctuation are read here,
//! numbers, dates and links in their own modules.

use super::abbreviation::{ABBREVIATIONS, DOTTED};
use super::acronym::{capital_word, roman_after};
use super::calendar::weekday_or_month;
use super::token::{Normalized, Pause, Token};
use super::transliterate::transliterate;

pub(super) struct Scanner {
    pub(super) chars: Vec<char>,
    pub(super) pos: usize,
    pub(super) tokens: Vec<Token>,
    /// Whether the text has lower-case letters: in text of capitals only,
    /// capital words are words, not acronyms.
    pub(super) mixed_case: bool,
}

impl Scanner {
    pub(super) fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    pub(super) fn at(&self, i: usize) -> Option<char> {
        self.chars.get(i).copied()
    }

    pub(super) fn prev(&self) -> Option<char> {
        self.pos.checked_sub(1).and_then(|i| self.chars.get(i).copied())
    }

    pub(super) fn words(&mut self, text: &str) {
        for w in text.split_whitespace() {
            self.tokens.push(Token::Word(w.to_string()));
        }
    }

    pub(super) fn pause(&mut self, p: Pause) {
        self.tokens.push(Token::Pause(p));
    }

    /// The index of the first non-space character from `i`.
    pub(super) fn skip_spaces(&self, mut i: usize) -> usize {
        while self.at(i) == Some(' ') {
            i += 1;
        }
        i
    }

    /// The run of ASCII letters starting at `i` (empty if none).
    pub(super) fn letters_at(&self, i: usize) -> String {
        self.chars[i.min(self.chars.len())..].iter().take_while(|c| c.is_ascii_alphabetic()).collect()
    }

    /// The digits starting at `i`, if 1..=`max` of them and no more.
    pub(super) fn digits_at(&self, i: usize, max: usize) -> Option<(u64, usize)> {
        let s: String = self.chars[i.min(self.chars.len())..].iter().take_while(|c| c.is_ascii_digit()).collect();
        (!s.is_empty() && s.len() <= max).then(|| (s.parse().unwrap_or(0), s.len()))
    }

    /// Whether the text after `pos` (skipping spaces) ends or starts with a
    /// capitalised word: the signs that a period closed a sentence. A month
    /// or weekday (`Mon. Jan. 5`) or a word of capitals (`Ave. NW`) after
    /// the period does not count.
    pub(super) fn sentence_ends_here(&self) -> bool {
        let i = self.skip_spaces(self.pos);
        if i >= self.chars.len() {
            return true;
        }
        let next = self.letters_at(i);
        let capitalised = next.starts_with(|c: char| c.is_ascii_uppercase())
            && (next.len() == 1 || next.chars().skip(1).any(|c| c.is_ascii_lowercase()));
        i > self.pos && capitalised && weekday_or_month(&next.to_ascii_lowercase()).is_none()
    }

    /// The word of letters that ends right before `i` and one space, as
    /// written (empty if none).
    fn word_before(&self, i: usize) -> String {
        if i < 2 || self.at(i - 1) != Some(' ') {
            return String::new();
        }
        let end = i - 1;
        let start = (0..end).rev().take_while(|&k| self.chars[k].is_ascii_alphabetic()).last().unwrap_or(end);
        self.chars[start..end].iter().collect()
    }

    /// Whether only spaces follow `pos`.
    pub(super) fn text_ends_here(&self) -> bool {
        self.skip_spaces(self.pos) >= self.chars.len()
    }

    fn matches_at(&self, pat: &str) -> bool {
        let n = pat.chars().count();
        if self.pos + n > self.chars.len() {
            return false;
        }
        let here = self.chars[self.pos..self.pos + n].iter().map(|c| c.to_ascii_lowercase());
        here.eq(pat.chars()) && !self.peek(n).is_some_and(|c| c.is_ascii_alphabetic())
    }

    /// Letters each followed by a period, at least two: `U.S.`, `U.S.A.`.
    fn dotted_letters(&self) -> Option<String> {
        let mut letters = String::new();
        let mut i = self.pos;
        while self.at(i).is_some_and(|c| c.is_ascii_alphabetic())
            && self.at(i + 1) == Some('.')
            && !self.at(i + 2).is_some_and(|c| c.is_ascii_alphabetic() && self.at(i + 3) != Some('.'))
        {
            letters.push(self.chars[i].to_ascii_lowercase());
            i += 2;
        }
        (letters.len() >= 2).then_some(letters)
    }

    fn scan_word(&mut self) {
        for (pat, expansion) in DOTTED {
            if self.matches_at(pat) {
                self.pos += pat.chars().count();
                match expansion {
                    Some(words) => self.words(words),
                    None => self.tokens.push(Token::Letters(pat.replace('.', ""))),
                }
                if expansion.is_none() && self.sentence_ends_here() {
                    self.pause(Pause::Long);
                }
                return;
            }
        }
        if let Some(letters) = self.dotted_letters() {
            self.pos += 2 * letters.len();
            self.tokens.push(Token::Letters(letters));
            if self.text_ends_here() {
                self.pause(Pause::Long);
            }
            return;
        }
        let start = self.pos;
        while let Some(c) = self.peek(0) {
            let inner_apostrophe =
                c == '\'' && self.peek(1).is_some_and(|n| n.is_ascii_alphabetic()) && self.pos > start;
            if c.is_ascii_alphabetic() || inner_apostrophe {
                self.pos += 1;
            } else {
                break;
            }
        }
        let raw: String = self.chars[start..self.pos].iter().collect();
        let lower = raw.to_ascii_lowercase();
        if self.scan_calendar_word(&raw, &lower) {
            return;
        }
        if self.peek(0) == Some('.') {
            if let Some((_, expansion, may_end)) = ABBREVIATIONS.iter().find(|(a, _, _)| *a == lower) {
                // `no.` is only "number" before a numeral.
                let numeral_follows = self.peek(1) == Some(' ') && self.peek(2).is_some_and(|c| c.is_ascii_digit())
                    || self.peek(1).is_some_and(|c| c.is_ascii_digit());
                if lower != "no" || numeral_follows {
                    self.pos += 1;
                    // `St. Paul` is a saint, `Main St. in` a street.
                    let street = lower == "st" && !self.sentence_ends_here() && {
                        let i = self.skip_spaces(self.pos);
                        !self.at(i).is_some_and(|c| c.is_ascii_uppercase())
                    };
                    self.words(if street { "street" } else { expansion });
                    if *may_end && self.sentence_ends_here() {
                        self.pause(Pause::Long);
                    }
                    return;
                }
            }
            // A capital initial followed by another capitalised word: "J. Smith".
            let initial = raw.len() == 1 && raw.chars().all(|c| c.is_ascii_uppercase());
            if initial && self.peek(1) == Some(' ') && self.peek(2).is_some_and(|c| c.is_ascii_uppercase()) {
                self.pos += 1;
            }
        }
        if let Some(words) = self.mixed_case.then(|| roman_after(&raw, &self.word_before(start))).flatten() {
            self.words(&words);
            return;
        }
        match capital_word(&raw, self.mixed_case) {
            Some(t) => self.tokens.push(t),
            None => self.tokens.push(Token::Word(lower)),
        }
    }

    fn scan(&mut self) {
        while let Some(c) = self.peek(0) {
            let word_start = !self.prev().is_some_and(|p| p.is_ascii_alphanumeric() || p == '.');
            match c {
                c if c.is_whitespace() => self.pos += 1,
                c if c.is_ascii_alphanumeric() && word_start && self.scan_link() => {}
                c if c.is_ascii_alphabetic() => self.scan_word(),
                c if c.is_ascii_digit() => self.scan_number(),
                '(' if self.scan_phone() => {}
                '$' | '£' | '€' | '¥' => self.scan_currency(c),
                '-' => self.scan_dash(),
                ',' | ';' | ':' | '(' | ')' | '[' | ']' | '{' | '}' => {
                    self.pos += 1;
                    self.pause(Pause::Short);
                }
                // A period inside a dotted name (`node.js`, `v1.2.3`) is no
                // sentence end.
                '.' if self.prev().is_some_and(|p| p.is_ascii_alphanumeric())
                    && self.peek(1).is_some_and(|n| n.is_ascii_lowercase() || n.is_ascii_digit()) =>
                {
                    let digits = self.prev().is_some_and(|p| p.is_ascii_digit())
                        && self.peek(1).is_some_and(|n| n.is_ascii_digit());
                    self.symbol_word(if digits { "point" } else { "dot" });
                }
                '.' | '!' | '?' => {
                    self.pos += 1;
                    self.pause(Pause::Long);
                }
                '&' => self.symbol_word("and"),
                '@' => self.symbol_word("at"),
                '+' => self.symbol_word("plus"),
                '=' => self.symbol_word("equals"),
                '%' => self.symbol_word("percent"),
                '°' => self.symbol_word("degrees"),
                '#' if self.peek(1).is_some_and(|c| c.is_ascii_digit()) => self.symbol_word("number"),
                _ => self.pos += 1,
            }
        }
    }

    pub(super) fn symbol_word(&mut self, word: &str) {
        self.pos += 1;
        self.words(word);
    }

    fn scan_dash(&mut self) {
        let before_alnum = self.prev().is_some_and(|c| c.is_ascii_alphanumeric());
        let after = self.peek(1);
        let negative_amount =
            matches!(after, Some('$' | '£' | '€' | '¥')) && self.peek(2).is_some_and(|c| c.is_ascii_digit());
        if !before_alnum && (after.is_some_and(|c| c.is_ascii_digit()) || negative_amount) {
            self.pos += 1;
            self.words("minus");
        } else if before_alnum && after.is_some_and(|c| c.is_ascii_alphanumeric()) {
            // A hyphen inside a compound: a word break, no pause.
            self.pos += 1;
        } else {
            while self.peek(0) == Some('-') {
                self.pos += 1;
            }
            self.pause(Pause::Short);
        }
    }
}

/// Normalizes raw text to words, acronyms, spelled letters and pauses (see
/// the module docs for the rules). Never fails: what it cannot read is
/// dropped.
pub fn normalize(raw: &str) -> Normalized {
    let chars = transliterate(raw);
    let mixed_case = chars.iter().any(char::is_ascii_lowercase);
    let mut scanner = Scanner { chars, pos: 0, tokens: Vec::new(), mixed_case };
    scanner.scan();
    let mut tokens: Vec<Token> = Vec::with_capacity(scanner.tokens.len());
    for t in scanner.tokens {
        match (t, tokens.last_mut()) {
            (Token::Pause(_), None) => {}
            (Token::Pause(p), Some(Token::Pause(q))) => *q = (*q).max(p),
            (t, _) => tokens.push(t),
        }
    }
    Normalized { tokens }
}
