//! Dates and times: month and weekday names and their abbreviations,
//! `Jan 5, 2024`, `5 January 2024`, `2024-01-05`, `1/5/2024`, `3:30 pm`,
//! `7 a.m.`

use super::scanner::Scanner;
use super::token::{Pause, Token};
use crate::number::{cardinal, ordinal, year};

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

const WEEKDAYS: [&str; 7] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

/// Abbreviations and the month (1–12) or weekday (101–107) they name.
const SHORT: &[(&str, u32)] = &[
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("sept", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
    ("mon", 101),
    ("tue", 102),
    ("tues", 102),
    ("wed", 103),
    ("thu", 104),
    ("thur", 104),
    ("thurs", 104),
    ("fri", 105),
    ("sat", 106),
    ("sun", 107),
];

/// A month (1–12) or weekday (101–107) from its lower-case name or
/// abbreviation, and whether it was abbreviated.
pub(super) fn weekday_or_month(lower: &str) -> Option<(u32, bool)> {
    if let Some(m) = MONTHS.iter().position(|m| *m == lower) {
        return Some((m as u32 + 1, false));
    }
    if let Some(d) = WEEKDAYS.iter().position(|d| *d == lower) {
        return Some((d as u32 + 101, false));
    }
    SHORT.iter().find(|(s, _)| *s == lower).map(|(_, k)| (*k, true))
}

fn name(k: u32) -> &'static str {
    if k > 100 {
        WEEKDAYS[(k - 101) as usize]
    } else {
        MONTHS[(k - 1) as usize]
    }
}

/// A month's name (1–12).
pub(super) fn month_name(m: u32) -> Option<&'static str> {
    MONTHS.get((m as usize).checked_sub(1)?).copied()
}

impl Scanner {
    /// A month from the capitalised name or abbreviation starting at `i`
    /// (an abbreviation may end with a period): the month and the index
    /// after it.
    pub(super) fn month_at(&self, i: usize) -> Option<(u32, usize)> {
        let raw = self.letters_at(i);
        if !raw.starts_with(|c: char| c.is_ascii_uppercase()) {
            return None;
        }
        let (m, short) = weekday_or_month(&raw.to_ascii_lowercase()).filter(|(k, _)| *k <= 12)?;
        let mut end = i + raw.len();
        if short && self.at(end) == Some('.') {
            end += 1;
        }
        Some((m, end))
    }

    /// A day of the month at `i` (`5`, `05`, `5th`, not followed by a
    /// digit, letter or `:`): the day and the index after it.
    fn day_at(&self, i: usize) -> Option<(u64, usize)> {
        let (d, n) = self.digits_at(i, 2)?;
        let mut end = i + n;
        let suffix: String = self.chars[end..].iter().take(2).collect::<String>().to_ascii_lowercase();
        if matches!(suffix.as_str(), "st" | "nd" | "rd" | "th") {
            end += 2;
        }
        let free = !self.at(end).is_some_and(|c| c.is_ascii_alphanumeric() || c == ':');
        ((1..=31).contains(&d) && free).then_some((d, end))
    }

    /// A year after a date at `i` (`, 2024` or ` 2024`): the year and the
    /// index after it.
    fn year_after(&self, i: usize) -> Option<(u64, usize)> {
        let mut j = i;
        if self.at(j) == Some(',') {
            j += 1;
        }
        let k = self.skip_spaces(j);
        if k == i {
            return None;
        }
        let (y, n) = self.digits_at(k, 4).filter(|(_, n)| *n == 4)?;
        let free = !self.at(k + n).is_some_and(|c| c.is_ascii_alphanumeric() || c == ':');
        free.then_some((y, k + n))
    }

    fn date(&mut self, day_first: bool, month: u32, day: u64, year_value: Option<u64>) {
        let m = month_name(month).unwrap_or("");
        if day_first {
            self.words(&format!("the {} of {m}", ordinal(day)));
        } else {
            self.words(&format!("{m} {}", ordinal(day)));
        }
        if let Some(y) = year_value {
            self.words(&year(y));
        }
    }

    /// A word that names a month or weekday, with `pos` after it: `Jan 5,
    /// 2024` → `january fifth twenty twenty four`, `Jan. 2024`, `Mon.` →
    /// `monday`. Returns false, consuming nothing, for any other word and
    /// for an abbreviation that stands alone without a period (`Jan` the
    /// name), and for one in lower case (`march`, `may`, `sat`).
    pub(super) fn scan_calendar_word(&mut self, raw: &str, lower: &str) -> bool {
        let Some((k, short)) = weekday_or_month(lower) else { return false };
        // Lower case, these are words (`march`, `may`, `sat`).
        if !raw.starts_with(|c: char| c.is_ascii_uppercase()) {
            return false;
        }
        let mut after = self.pos;
        let period = short && self.at(after) == Some('.');
        if period {
            after += 1;
        }
        if k <= 12 {
            let i = self.skip_spaces(after);
            if i > after {
                if let Some((day, end)) = self.day_at(i) {
                    let y = self.year_after(end);
                    self.date(false, k, day, y.map(|(y, _)| y));
                    self.pos = y.map_or(end, |(_, e)| e);
                    return true;
                }
            }
            if let Some((y, end)) = self.year_after(after).filter(|_| self.at(after) != Some(',')) {
                self.words(name(k));
                self.words(&year(y));
                self.pos = end;
                return true;
            }
        }
        // `Mon-Fri`, `Mon.-Fri.`, `Jan.-Mar.`
        let range = self.at(after) == Some('-')
            && weekday_or_month(&self.letters_at(after + 1).to_ascii_lowercase())
                .is_some_and(|(j, _)| (j > 100) == (k > 100))
            && self.at(after + 1).is_some_and(|c| c.is_ascii_uppercase());
        let range_end = self.tokens.last() == Some(&Token::Word("to".into()))
            && self.pos > raw.len()
            && self.at(self.pos - raw.len() - 1) == Some('-');
        if short && !period && !range && !range_end || lower == "may" {
            return false;
        }
        self.pos = after;
        self.words(name(k));
        if range {
            self.symbol_word("to");
        } else if period && self.sentence_ends_here() {
            self.pause(Pause::Long);
        }
        true
    }

    /// After a day number `day` ending at `pos`: ` January 2024` →
    /// `the fifth of january twenty twenty four`.
    pub(super) fn scan_day_month(&mut self, day: u64) -> bool {
        if !(1..=31).contains(&day) || self.peek(0) != Some(' ') {
            return false;
        }
        let Some((m, end)) = self.month_at(self.skip_spaces(self.pos)) else { return false };
        let y = self.year_after(end);
        self.date(true, m, day, y.map(|(y, _)| y));
        self.pos = y.map_or(end, |(_, e)| e);
        true
    }

    /// `2024-01-05` and `1/5/2024` (US order) at `pos`.
    pub(super) fn scan_numeric_date(&mut self) -> bool {
        let p = self.pos;
        let free = |s: &Scanner, i: usize| !s.at(i).is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '/');
        if let (Some((y, 4)), Some('-'), Some((m, 2)), Some('-'), Some((d, 2))) =
            (self.digits_at(p, 4), self.at(p + 4), self.digits_at(p + 5, 2), self.at(p + 7), self.digits_at(p + 8, 2))
        {
            if (1..=12).contains(&m) && (1..=31).contains(&d) && free(self, p + 10) {
                self.date(false, m as u32, d, Some(y));
                self.pos = p + 10;
                return true;
            }
        }
        let Some((m, a)) = self.digits_at(p, 2) else { return false };
        let Some((d, b)) = self.digits_at(p + a + 1, 2).filter(|_| self.at(p + a) == Some('/')) else {
            return false;
        };
        let i = p + a + 1 + b;
        let Some((y, c)) = self.digits_at(i + 1, 4).filter(|(_, c)| *c == 2 || *c == 4) else { return false };
        if self.at(i) != Some('/') || !(1..=12).contains(&m) || !(1..=31).contains(&d) || !free(self, i + 1 + c) {
            return false;
        }
        self.date(false, m as u32, d, None);
        self.words(&if c == 4 { year(y) } else { two_digit_year(y) });
        self.pos = i + 1 + c;
        true
    }

    /// `am`, `pm`, `a.m.`, `p.m.` (any case, after at most one space) at
    /// `pos`: pushes the letters and moves past them.
    pub(super) fn scan_meridiem(&mut self) -> bool {
        let i = if self.peek(0) == Some(' ') { self.pos + 1 } else { self.pos };
        let Some(first) = self.at(i).map(|c| c.to_ascii_lowercase()).filter(|c| *c == 'a' || *c == 'p') else {
            return false;
        };
        let m = |j: usize| self.at(j).is_some_and(|c| c.eq_ignore_ascii_case(&'m'));
        let letter = |j: usize| self.at(j).is_some_and(|c| c.is_ascii_alphanumeric());
        let end = if m(i + 1) && !letter(i + 2) {
            i + 2
        } else if self.at(i + 1) == Some('.') && m(i + 2) && self.at(i + 3) == Some('.') {
            i + 4
        } else {
            return false;
        };
        self.tokens.push(Token::Letters(format!("{first}m")));
        self.pos = end;
        if self.at(end - 1) == Some('.') && self.sentence_ends_here() {
            self.pause(Pause::Long);
        }
        true
    }

    /// A time `h:mm` (`h` 0–24, `mm` 00–59) at `pos` with `h` already read:
    /// `3:30` → `three thirty`, `3:05` → `three oh five`, `3:00` → `three
    /// o'clock`, `15:00` → `fifteen hundred`, `3:30 pm` → `three thirty p m`.
    pub(super) fn scan_time(&mut self, h: u64) -> bool {
        let Some((m, 2)) = self.digits_at(self.pos + 1, 2) else { return false };
        if self.peek(0) != Some(':') || h > 24 || m > 59 {
            return false;
        }
        self.pos += 3;
        let spoken = match m {
            0 => cardinal(h),
            1..=9 => format!("{} oh {}", cardinal(h), cardinal(m)),
            _ => format!("{} {}", cardinal(h), cardinal(m)),
        };
        if !self.scan_meridiem_after(&spoken) {
            self.words(&spoken);
            match m {
                0 if (1..=12).contains(&h) => self.words("o'clock"),
                0 => self.words("hundred"),
                _ => {}
            }
        }
        true
    }

    /// `spoken` and then `am`/`pm` if they follow ([`Scanner::scan_meridiem`]);
    /// false, pushing nothing, if they do not.
    pub(super) fn scan_meridiem_after(&mut self, spoken: &str) -> bool {
        let at = self.tokens.len();
        if !self.scan_meridiem() {
            return false;
        }
        let words: Vec<Token> = spoken.split(' ').map(|w| Token::Word(w.to_string())).collect();
        self.tokens.splice(at..at, words);
        true
    }
}

/// `24` → `twenty four`, `05` → `oh five`, `00` → `two thousand`.
fn two_digit_year(y: u64) -> String {
    match y {
        0 => "two thousand".to_string(),
        1..=9 => format!("oh {}", cardinal(y)),
        _ => cardinal(y),
    }
}
