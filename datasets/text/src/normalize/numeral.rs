//! Numbers and what they count: cardinals, decimals, ordinals, years and
//! decades, fractions, ranges, percentages, units and
//! currency.

use super::calendar::month_name;
use super::scanner::Scanner;
use super::token::Token;
use super::unit::{per_unit_at, unit_at};
use crate::number::{cardinal, digits, ordinal, year};

const SCALE_WORDS: &[&str] = &["thousand", "million", "billion", "trillion"];

/// Scale suffixes after an amount: `$5M`, `€2.5bn`, `$10k`.
const SCALE_SUFFIXES: &[(&str, &str)] =
    &[("k", "thousand"), ("K", "thousand"), ("m", "million"), ("M", "million"), ("bn", "billion"), ("B", "billion")];

/// `M` and `bn` right after a number (`5M users`), and `B` after a
/// decimal (`1.5B`, not `221B Baker Street`): its length and the scale
/// word.
fn scale_suffix(rest: &[char], decimal: bool) -> Option<(usize, &'static str)> {
    let suffixes: &[(&str, &'static str)] = if decimal {
        &[("M", "million"), ("bn", "billion"), ("B", "billion")]
    } else {
        &[("M", "million"), ("bn", "billion")]
    };
    suffixes.iter().find_map(|&(s, word)| {
        let n = s.len();
        let here = rest.get(..n)?;
        let free = !rest.get(n).is_some_and(|c| c.is_ascii_alphanumeric());
        (here.iter().copied().eq(s.chars()) && free).then_some((n, word))
    })
}

fn plural(spoken: &str) -> String {
    match spoken.strip_suffix('y') {
        Some(stem) => format!("{stem}ies"),
        None if spoken.ends_with('x') || spoken.ends_with("ch") => format!("{spoken}es"),
        None => format!("{spoken}s"),
    }
}

/// `n/d` in words: `1/2` → `one half`, `3/4` → `three quarters`, `2/3` →
/// `two thirds`.
fn fraction(n: u64, d: u64) -> String {
    let unit = match d {
        2 => "half".to_string(),
        4 => "quarter".to_string(),
        _ => ordinal(d),
    };
    let unit = match (n, d) {
        (1, _) => unit,
        (_, 2) => "halves".to_string(),
        _ => format!("{unit}s"),
    };
    format!("{} {unit}", cardinal(n))
}

impl Scanner {
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

    pub(super) fn scan_number(&mut self) {
        if self.scan_numeric_date() || self.scan_phone() {
            return;
        }
        let first_word = self.tokens.len();
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
        let whole = frac.is_none() && !grouped;
        if let Some(f) = &frac {
            self.words(&cardinal(n));
            self.words("point");
            self.words(&digits(f));
        } else if whole && self.scan_time(n) {
            return;
        } else if whole && int.len() > 1 && int.starts_with('0') {
            // `007`, `0800`: a code, read digit by digit.
            self.words(&digits(&int));
        } else if let Some(suffix) = self.ordinal_suffix() {
            self.pos += suffix;
            if !(whole && self.scan_day_month(n)) {
                self.words(&ordinal(n));
            }
            return;
        } else if whole && self.scan_day_month(n) {
            return;
        } else if let Some(d) = self.denominator().filter(|_| whole) {
            self.pos += 1 + d.to_string().len();
            if (1..=12).contains(&n) && (13..=31).contains(&d) && d != 16 {
                // `3/15`: a day no fraction is written with.
                self.words(&format!("{} {}", month_name(n as u32).unwrap_or(""), ordinal(d)));
            } else if n < d && d <= 100 {
                self.words(&fraction(n, d));
            } else {
                self.words(&cardinal(n));
                self.words(&cardinal(d));
            }
        } else if whole && (1..=12).contains(&n) && self.scan_meridiem_after(&cardinal(n)) {
            return;
        } else if whole && int.len() == 4 && !int.starts_with('0') && (1000..=2999).contains(&n) {
            let spoken = year(n);
            if self.peek(0) == Some('s') && !self.peek(1).is_some_and(|c| c.is_ascii_alphabetic()) {
                self.pos += 1;
                self.words(&plural(&spoken));
            } else {
                self.words(&spoken);
            }
        } else if whole
            && int.len() == 2
            && n % 10 == 0
            && self.peek(0) == Some('s')
            && !self.peek(1).is_some_and(|c| c.is_ascii_alphabetic())
        {
            // `the 80s`
            self.pos += 1;
            self.words(&plural(&cardinal(n)));
        } else {
            self.words(&cardinal(n));
        }
        self.after_number(n == 1 && frac.is_none(), frac.is_some(), first_word);
    }

    /// What may follow a number whose words start at token `first_word`:
    /// `%`, a unit, `in` after feet (`6 ft 2 in`), a range (`10-20`), a
    /// ratio (`16:9`), a mixed fraction (`2 1/2`).
    fn after_number(&mut self, one: bool, decimal: bool, first_word: usize) {
        if self.peek(0) == Some('%') {
            self.pos += 1;
            self.words("percent");
        }
        let i = if self.peek(0) == Some(' ') { self.pos + 1 } else { self.pos };
        let rest = &self.chars[i.min(self.chars.len())..];
        let after_feet = matches!(self.tokens[..first_word].last(), Some(Token::Word(w)) if w == "feet" || w == "foot");
        let hyphen = self.peek(0) == Some('-');
        if let Some((n, reading)) = unit_at(rest, one) {
            self.pos = i + n;
            self.words(reading);
        } else if let Some((n, reading)) = unit_at(&rest[hyphen as usize..], true).filter(|_| hyphen) {
            // `a 5-km race`: an adjective, singular.
            self.pos = i + 1 + n;
            self.words(reading);
        } else if let Some((n, word)) = scale_suffix(rest, decimal).filter(|_| i == self.pos) {
            self.pos += n;
            self.words(word);
        } else if after_feet && rest.starts_with(&['i', 'n']) && !rest.get(2).is_some_and(|c| c.is_ascii_alphanumeric())
        {
            self.pos = i + 2;
            self.words(if one { "inch" } else { "inches" });
        }
        self.per_unit();
        if matches!(self.peek(0), Some('-' | ':')) && self.peek(1).is_some_and(|c| c.is_ascii_digit()) {
            self.symbol_word("to");
        } else if self.peek(0) == Some(' ') && self.mixed_fraction_at(self.pos + 1) {
            self.words("and");
        }
    }

    /// `/lb`, `/s` after an amount or a unit: `per pound`, `per second`.
    fn per_unit(&mut self) {
        if let Some((n, words)) = per_unit_at(&self.chars[self.pos..]) {
            self.pos += n;
            self.words(&words);
        }
    }

    fn mixed_fraction_at(&self, i: usize) -> bool {
        let Some((n, a)) = self.digits_at(i, 2) else { return false };
        let Some((d, b)) = self.digits_at(i + a + 1, 2) else { return false };
        self.at(i + a) == Some('/')
            && n < d
            && !self.at(i + a + 1 + b).is_some_and(|c| c.is_ascii_alphanumeric() || c == '/')
    }

    /// `/d` at `pos` (1–3 digits, not another `/` after): `d`.
    fn denominator(&self) -> Option<u64> {
        if self.peek(0) != Some('/') {
            return None;
        }
        let (d, n) = self.digits_at(self.pos + 1, 3)?;
        let end = self.pos + 1 + n;
        (d > 0 && !self.at(end).is_some_and(|c| c.is_ascii_alphanumeric() || c == '/')).then_some(d)
    }

    fn ordinal_suffix(&self) -> Option<usize> {
        let a = self.peek(0)?.to_ascii_lowercase();
        let b = self.peek(1)?.to_ascii_lowercase();
        let is_suffix = matches!((a, b), ('s', 't') | ('n', 'd') | ('r', 'd') | ('t', 'h'));
        (is_suffix && !self.peek(2).is_some_and(|c| c.is_ascii_alphabetic())).then_some(2)
    }

    pub(super) fn scan_currency(&mut self, symbol: char) {
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
        // "$1.5 million" and "$1.5M" read the scale before the unit.
        let rest: String = self.chars[self.pos..].iter().take(12).collect();
        let scale = SCALE_WORDS
            .iter()
            .find(|s| rest.trim_start().to_ascii_lowercase().starts_with(*s) && rest.starts_with(' '))
            .map(|s| (rest.len() - rest.trim_start().len() + s.len(), *s))
            .or_else(|| {
                SCALE_SUFFIXES.iter().find_map(|(suffix, word)| {
                    let after = rest.strip_prefix(suffix)?;
                    (!after.starts_with(|c: char| c.is_ascii_alphanumeric())).then_some((suffix.len(), *word))
                })
            });
        if let Some((skip, scale)) = scale {
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
        self.per_unit();
        if self.peek(0) == Some('-') && self.peek(1).is_some_and(|c| c.is_ascii_digit()) {
            self.symbol_word("to");
        }
    }
}
