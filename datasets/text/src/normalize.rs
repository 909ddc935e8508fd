//! Text normalization: raw text as corpora and users type it, to lower-case
//! words and pauses.
//!
//! The rules, in the order a scanner meets them:
//!
//! * Non-ASCII letters are transliterated (`é` → `e`, curly quotes → plain,
//!   dashes → a pause); other non-ASCII symbols are dropped.
//! * Currency (`$ £ € ¥` before a number): `$3.50` → `three dollars fifty
//!   cents`, `$1.5 million` → `one point five million dollars`.
//! * Numbers: `1,234` → cardinal; four-digit integers `1000..=2999` are read
//!   as years (`1999` → `nineteen ninety nine`); `3.14` → `three point one
//!   four`; `21st` → `twenty first`; `1990s` → `nineteen nineties`; `50%` →
//!   `fifty percent`; `3:30` → `three thirty`; `-4` → `minus four`.
//! * Abbreviations with a period (`Mr.`, `Dr.`, `St.`, `e.g.`, `etc.` …) are
//!   expanded and their period is not a sentence end (except `etc.`, `Inc.`
//!   and the like when the text ends or a capital follows).
//! * Punctuation becomes pauses: `, ; : ( ) --` and a spaced `-` a short
//!   pause, `. ! ?` a long one. Runs of pauses merge into the strongest;
//!   pauses before the first word are dropped.
//! * `&` → `and`, `@` → `at`, `+` → `plus`, `=` → `equals`; quotes and any
//!   other symbol are dropped.

use crate::number::{cardinal, digits, ordinal, year};

/// A pause between words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pause {
    /// Comma, semicolon, colon, dash, parenthesis.
    Short,
    /// End of a sentence.
    Long,
}

/// One unit of normalized text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A lower-case word of `a`–`z` and inner apostrophes.
    Word(String),
    Pause(Pause),
}

/// The result of [`normalize`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Normalized {
    pub tokens: Vec<Token>,
}

impl Normalized {
    /// The words, in order, without pauses.
    pub fn words(&self) -> impl Iterator<Item = &str> {
        self.tokens.iter().filter_map(|t| match t {
            Token::Word(w) => Some(w.as_str()),
            Token::Pause(_) => None,
        })
    }

    /// A one-line rendering: words separated by spaces, a short pause as `,`
    /// and a long pause as `.` after the word before it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for t in &self.tokens {
            match t {
                Token::Word(w) => {
                    if !out.is_empty() {
                        out.push(' ');
                    }
                    out.push_str(w);
                }
                Token::Pause(Pause::Short) => out.push(','),
                Token::Pause(Pause::Long) => out.push('.'),
            }
        }
        out
    }
}

/// Abbreviations written with a final period, and what they are read as.
/// `true` marks those that may also end a sentence.
const ABBREVIATIONS: &[(&str, &str, bool)] = &[
    ("mr", "mister", false),
    ("mrs", "missus", false),
    ("ms", "miz", false),
    ("dr", "doctor", false),
    ("st", "saint", false),
    ("mt", "mount", false),
    ("prof", "professor", false),
    ("rev", "reverend", false),
    ("gen", "general", false),
    ("col", "colonel", false),
    ("maj", "major", false),
    ("capt", "captain", false),
    ("lt", "lieutenant", false),
    ("sgt", "sergeant", false),
    ("hon", "honorable", false),
    ("vs", "versus", false),
    ("approx", "approximately", false),
    ("dept", "department", false),
    ("no", "number", false),
    ("jr", "junior", true),
    ("sr", "senior", true),
    ("esq", "esquire", true),
    ("co", "company", true),
    ("inc", "incorporated", true),
    ("ltd", "limited", true),
    ("ft", "feet", true),
    ("etc", "et cetera", true),
];

/// Dotted abbreviations matched as written (case-insensitive).
const DOTTED: &[(&str, &str)] =
    &[("e.g.", "for example"), ("i.e.", "that is"), ("a.m.", "a m"), ("p.m.", "p m"), ("u.s.", "u s")];

const SCALE_WORDS: &[&str] = &["thousand", "million", "billion", "trillion"];

fn transliterate(raw: &str) -> Vec<char> {
    let mut out = Vec::with_capacity(raw.len());
    for c in raw.chars() {
        let s: &str = match c {
            c if c.is_ascii() => {
                out.push(if c.is_ascii_control() { ' ' } else { c });
                continue;
            }
            '\u{2018}' | '\u{2019}' | '\u{02bc}' => "'",
            '\u{201c}' | '\u{201d}' | '\u{00ab}' | '\u{00bb}' => "\"",
            '\u{2013}' | '\u{2014}' | '\u{2015}' => " -- ",
            '\u{2026}' => "...",
            '\u{00a0}' => " ",
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => "a",
            'À' | 'Á' | 'Â' | 'Ã' | 'Ä' | 'Å' => "A",
            'è' | 'é' | 'ê' | 'ë' => "e",
            'È' | 'É' | 'Ê' | 'Ë' => "E",
            'ì' | 'í' | 'î' | 'ï' => "i",
            'Ì' | 'Í' | 'Î' | 'Ï' => "I",
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' => "o",
            'Ò' | 'Ó' | 'Ô' | 'Õ' | 'Ö' | 'Ø' => "O",
            'ù' | 'ú' | 'û' | 'ü' => "u",
            'Ù' | 'Ú' | 'Û' | 'Ü' => "U",
            'ç' => "c",
            'Ç' => "C",
            'ñ' => "n",
            'Ñ' => "N",
            'ß' => "ss",
            'æ' => "ae",
            'Æ' => "AE",
            'œ' => "oe",
            'Œ' => "OE",
            '£' | '€' | '¥' => {
                out.push(c);
                continue;
            }
            _ => " ",
        };
        out.extend(s.chars());
    }
    out
}

struct Scanner {
    chars: Vec<char>,
    pos: usize,
    tokens: Vec<Token>,
}

impl Scanner {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn prev(&self) -> Option<char> {
        self.pos.checked_sub(1).and_then(|i| self.chars.get(i).copied())
    }

    fn words(&mut self, text: &str) {
        for w in text.split_whitespace() {
            self.tokens.push(Token::Word(w.to_string()));
        }
    }

    fn pause(&mut self, p: Pause) {
        self.tokens.push(Token::Pause(p));
    }

    /// Whether the text after `pos` (skipping spaces) ends or starts with a
    /// capital letter: the signs that a period closed a sentence.
    fn sentence_ends_here(&self) -> bool {
        let mut i = self.pos;
        while i < self.chars.len() && self.chars[i].is_whitespace() {
            i += 1;
        }
        i >= self.chars.len() || (i > self.pos && self.chars[i].is_ascii_uppercase())
    }

    fn matches_at(&self, pat: &str) -> bool {
        let n = pat.chars().count();
        if self.pos + n > self.chars.len() {
            return false;
        }
        let here = self.chars[self.pos..self.pos + n].iter().map(|c| c.to_ascii_lowercase());
        here.eq(pat.chars()) && !self.peek(n).is_some_and(|c| c.is_ascii_alphabetic())
    }

    fn scan_word(&mut self) {
        for (pat, expansion) in DOTTED {
            if self.matches_at(pat) {
                self.pos += pat.chars().count();
                self.words(expansion);
                return;
            }
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
        if self.peek(0) == Some('.') {
            if let Some((_, expansion, may_end)) = ABBREVIATIONS.iter().find(|(a, _, _)| *a == lower) {
                // `no.` is only "number" before a numeral.
                let numeral_follows = self.peek(1) == Some(' ') && self.peek(2).is_some_and(|c| c.is_ascii_digit())
                    || self.peek(1).is_some_and(|c| c.is_ascii_digit());
                if lower != "no" || numeral_follows {
                    self.pos += 1;
                    self.words(expansion);
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
        self.tokens.push(Token::Word(lower));
    }

    /// Reads `1,234.56` from `pos`: the integer digits (commas removed) and the
    /// fraction digits, if any.
    fn read_number(&mut self) -> (String, Option<String>, bool) {
        let mut int = String::new();
        let mut grouped = false;
        while let Some(c) = self.peek(0) {
            if c.is_ascii_digit() {
                int.push(c);
                self.pos += 1;
            } else if c == ','
                && !int.is_empty()
                && (1..=3).all(|k| self.peek(k).is_some_and(|d| d.is_ascii_digit()))
                && !self.peek(4).is_some_and(|d| d.is_ascii_digit())
            {
                self.pos += 1;
                grouped = true;
            } else {
                break;
            }
        }
        let mut frac = None;
        if self.peek(0) == Some('.') && self.peek(1).is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
            let mut f = String::new();
            while let Some(c) = self.peek(0).filter(|c| c.is_ascii_digit()) {
                f.push(c);
                self.pos += 1;
            }
            frac = Some(f);
        }
        (int, frac, grouped)
    }

    fn scan_number(&mut self) {
        let (int, frac, grouped) = self.read_number();
        let value: Option<u64> = int.parse().ok();
        let Some(n) = value.filter(|_| int.len() <= 18) else {
            self.words(&digits(&int));
            if let Some(f) = frac {
                self.words("point");
                self.words(&digits(&f));
            }
            return;
        };
        if let Some(f) = frac {
            self.words(&cardinal(n));
            self.words("point");
            self.words(&digits(&f));
        } else if self.peek(0) == Some(':')
            && n <= 24
            && self.peek(1).is_some_and(|c| c.is_ascii_digit())
            && self.peek(2).is_some_and(|c| c.is_ascii_digit())
            && !self.peek(3).is_some_and(|c| c.is_ascii_digit())
        {
            let m = self.peek(1).and_then(|c| c.to_digit(10)).unwrap_or(0) as u64 * 10
                + self.peek(2).and_then(|c| c.to_digit(10)).unwrap_or(0) as u64;
            self.pos += 3;
            self.words(&cardinal(n));
            match m {
                0 => self.words("o'clock"),
                1..=9 => self.words(&format!("oh {}", cardinal(m))),
                _ => self.words(&cardinal(m)),
            }
        } else if let Some(suffix) = self.ordinal_suffix() {
            self.pos += suffix;
            self.words(&ordinal(n));
        } else if !grouped && int.len() == 4 && !int.starts_with('0') && (1000..=2999).contains(&n) {
            let spoken = year(n);
            if self.peek(0) == Some('s') && !self.peek(1).is_some_and(|c| c.is_ascii_alphabetic()) {
                self.pos += 1;
                self.words(&plural(&spoken));
            } else {
                self.words(&spoken);
            }
        } else {
            self.words(&cardinal(n));
        }
        if self.peek(0) == Some('%') {
            self.pos += 1;
            self.words("percent");
        }
    }

    fn ordinal_suffix(&self) -> Option<usize> {
        let a = self.peek(0)?.to_ascii_lowercase();
        let b = self.peek(1)?.to_ascii_lowercase();
        let is_suffix = matches!((a, b), ('s', 't') | ('n', 'd') | ('r', 'd') | ('t', 'h'));
        (is_suffix && !self.peek(2).is_some_and(|c| c.is_ascii_alphabetic())).then_some(2)
    }

    fn scan_currency(&mut self, symbol: char) {
        self.pos += 1;
        let (one, many, sub_one, sub_many) = match symbol {
            '$' => ("dollar", "dollars", "cent", "cents"),
            '£' => ("pound", "pounds", "penny", "pence"),
            '€' => ("euro", "euros", "cent", "cents"),
            _ => ("yen", "yen", "sen", "sen"),
        };
        if !self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
            self.words(many);
            return;
        }
        let (int, frac, _) = self.read_number();
        let n: u64 = int.parse().unwrap_or(0);
        // "$1.5 million" reads the scale before the unit.
        let rest: String = self.chars[self.pos..].iter().take(12).collect();
        let scale = SCALE_WORDS
            .iter()
            .find(|s| rest.trim_start().to_ascii_lowercase().starts_with(*s) && rest.starts_with(' '));
        if let Some(scale) = scale {
            let skip = rest.len() - rest.trim_start().len() + scale.len();
            self.pos += skip;
            self.words(&cardinal(n));
            if let Some(f) = frac {
                self.words("point");
                self.words(&digits(&f));
            }
            self.words(scale);
            self.words(many);
            return;
        }
        match frac {
            Some(f) if f.len() == 2 => {
                let cents: u64 = f.parse().unwrap_or(0);
                if n > 0 || cents == 0 {
                    self.words(&cardinal(n));
                    self.words(if n == 1 { one } else { many });
                }
                if cents > 0 {
                    self.words(&cardinal(cents));
                    self.words(if cents == 1 { sub_one } else { sub_many });
                }
            }
            Some(f) => {
                self.words(&cardinal(n));
                self.words("point");
                self.words(&digits(&f));
                self.words(many);
            }
            None => {
                self.words(&cardinal(n));
                self.words(if n == 1 { one } else { many });
            }
        }
    }

    fn scan(&mut self) {
        while let Some(c) = self.peek(0) {
            match c {
                c if c.is_whitespace() => self.pos += 1,
                c if c.is_ascii_alphabetic() => self.scan_word(),
                c if c.is_ascii_digit() => self.scan_number(),
                '$' | '£' | '€' | '¥' => self.scan_currency(c),
                '-' => self.scan_dash(),
                ',' | ';' | ':' | '(' | ')' | '[' | ']' | '{' | '}' => {
                    self.pos += 1;
                    self.pause(Pause::Short);
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
                '#' if self.peek(1).is_some_and(|c| c.is_ascii_digit()) => self.symbol_word("number"),
                _ => self.pos += 1,
            }
        }
    }

    fn symbol_word(&mut self, word: &str) {
        self.pos += 1;
        self.words(word);
    }

    fn scan_dash(&mut self) {
        let before_alnum = self.prev().is_some_and(|c| c.is_ascii_alphanumeric());
        let after = self.peek(1);
        if !before_alnum && after.is_some_and(|c| c.is_ascii_digit()) {
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

fn plural(spoken: &str) -> String {
    match spoken.strip_suffix('y') {
        Some(stem) => format!("{stem}ies"),
        None if spoken.ends_with('x') || spoken.ends_with("ch") => format!("{spoken}es"),
        None => format!("{spoken}s"),
    }
}

/// Normalizes raw text to lower-case words and pauses (see the module docs
/// for the rules). Never fails: what it cannot read is dropped.
pub fn normalize(raw: &str) -> Normalized {
    let mut scanner = Scanner { chars: transliterate(raw), pos: 0, tokens: Vec::new() };
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
