//! Capital words: which are acronyms, and which of those could be read as
//! words.
//!
//! In text that has lower-case letters, a word of capitals only is an
//! acronym when it has 2–6 letters:
//!
//! * 2 letters (`TV`, `US`, `AI`, `ID`) are spelled: read as words they are
//!   almost always a different word.
//! * 3–6 letters are [`Token::Acronym`] (read as a word if the lexicon has
//!   it, else spelled) when they *read as a word*: a vowel (`y` counts after
//!   the first letter), an initial consonant cluster English words start
//!   with, a final one they end with, and no three consonants in a row
//!   (`NASA`, `NATO`, `UNICEF`, `AIDS`); otherwise [`Token::Letters`] (`FBI`
//!   starts with `fb`, `IBM` ends with `bm`, `CNN` has no vowel).
//!   A few well-known acronyms that pass this test are spelled all the same
//!   (`MIT`, `CEO`, `USA`: [`SPELLED`]).
//! * Mixed case with at least two capitals in 2–4 letters (`PhD`, `MSc`,
//!   `iOS`) is spelled.
//!
//! In text of capitals only (a shouted headline), capital words are words,
//! except those without a vowel (`TV`, `BBC`), which are spelled.

use super::token::Token;

const ONSETS: &[&str] = &[
    "bl", "br", "ch", "cl", "cr", "dr", "dw", "fl", "fr", "gl", "gr", "kl", "kn", "kr", "ph", "pl", "pr", "sc", "sh",
    "sk", "sl", "sm", "sn", "sp", "st", "sw", "th", "tr", "tw", "wh", "wr", "sch", "scr", "shr", "spl", "spr", "str",
    "thr",
];

const CODAS: &[&str] = &[
    "ch", "ck", "ct", "ds", "ft", "gs", "ks", "ld", "lf", "lk", "lm", "lp", "ls", "lt", "mp", "ms", "nd", "ng", "nk",
    "ns", "nt", "ps", "pt", "rb", "rd", "rf", "rk", "rl", "rm", "rn", "rp", "rs", "rt", "sh", "sk", "sp", "st", "th",
    "ts",
];

/// Acronyms that could be read as words but are spelled.
pub(super) const SPELLED: &[&str] =
    &["api", "ceo", "cia", "cio", "coo", "epa", "eta", "ico", "ipo", "iou", "mit", "nih", "nyc", "usa", "ufo"];

fn is_vowel(w: &[u8], i: usize) -> bool {
    matches!(w[i], b'a' | b'e' | b'i' | b'o' | b'u') || (w[i] == b'y' && i > 0)
}

/// Whether lower-case letters could be read as an English word (module
/// docs).
pub(super) fn reads_as_word(word: &str) -> bool {
    let w = word.as_bytes();
    let vowels: Vec<usize> = (0..w.len()).filter(|&i| is_vowel(w, i)).collect();
    let (Some(&first), Some(&last)) = (vowels.first(), vowels.last()) else {
        return false;
    };
    let onset = &word[..first];
    let coda = &word[last + 1..];
    let mut run = 0;
    for i in 0..w.len() {
        run = if is_vowel(w, i) { 0 } else { run + 1 };
        if run >= 3 {
            return false;
        }
    }
    (onset.len() <= 1 || ONSETS.contains(&onset)) && (coda.len() <= 1 || CODAS.contains(&coda))
}

/// The token of a word of ASCII letters `raw` when it is an acronym or
/// spelled (module docs), `None` for a plain word. `mixed_case`: whether
/// the text has lower-case letters.
pub(super) fn capital_word(raw: &str, mixed_case: bool) -> Option<Token> {
    if !raw.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let n = raw.len();
    let upper = raw.chars().filter(char::is_ascii_uppercase).count();
    let lower = raw.to_ascii_lowercase();
    let has_vowel = (0..n).any(|i| is_vowel(lower.as_bytes(), i));
    if upper == n && (2..=6).contains(&n) {
        if !has_vowel {
            return Some(Token::Letters(lower));
        }
        if !mixed_case {
            return None;
        }
        if n > 2 && reads_as_word(&lower) && !SPELLED.contains(&lower.as_str()) {
            return Some(Token::Acronym(lower));
        }
        return Some(Token::Letters(lower));
    }
    (mixed_case && upper >= 2 && upper < n && (2..=4).contains(&n)).then_some(Token::Letters(lower))
}
