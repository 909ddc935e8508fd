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
//!   the first letter) and a consonant, an initial consonant cluster English
//!   words start with, a final one they end with, and no three consonants
//!   in a row (`NASA`, `NATO`, `UNICEF`, `AIDS`); otherwise
//!   [`Token::Letters`] (`FBI` starts with `fb`, `IBM` ends with `bm`, `CNN`
//!   has no vowel). A few well-known acronyms that pass this test are
//!   spelled all the same (`MIT`, `CEO`, `USA`: [`SPELLED`]).
//! * Mixed case with at least two capitals in 2–4 letters (`PhD`, `MSc`,
//!   `iOS`) is spelled.
//!
//! A Roman numeral of 2 or more letters after a capitalised word is a
//! number: `World War II` → `world war two`, `Henry VIII` → `henry the
//! eighth` (see [`CARDINAL_AFTER`]).
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
    &["api", "ceo", "cia", "cio", "coo", "epa", "eta", "ico", "ipo", "iou", "mit", "nih", "nyc", "sec", "usa", "ufo"];

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
    if vowels.len() == w.len() {
        return false;
    }
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

/// Words after which a Roman numeral is a cardinal (`World War II` →
/// `world war two`); after any other capitalised word it is a regnal
/// ordinal (`Henry VIII` → `henry the eighth`).
const CARDINAL_AFTER: &[&str] = &[
    "act", "book", "chapter", "class", "level", "part", "phase", "scene", "section", "stage", "title", "type",
    "volume", "war",
];

/// The value of a Roman numeral of 2 or more letters `I V X L` written in
/// canonical form (`IV`, not `IIII`), up to 50.
fn roman(raw: &str) -> Option<u64> {
    let value = |c| match c {
        'I' => Some(1),
        'V' => Some(5),
        'X' => Some(10),
        'L' => Some(50),
        _ => None,
    };
    let v: Vec<u64> = raw.chars().map(value).collect::<Option<_>>()?;
    let n = v.iter().enumerate().fold(0i64, |acc, (i, &x)| {
        if v.get(i + 1).is_some_and(|&y| y > x) {
            acc - x as i64
        } else {
            acc + x as i64
        }
    });
    let n = u64::try_from(n).ok().filter(|n| (1..=50).contains(n))?;
    (raw.len() >= 2 && to_roman(n) == raw).then_some(n)
}

fn to_roman(mut n: u64) -> String {
    let mut out = String::new();
    for (v, s) in [(50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")] {
        while n >= v {
            out.push_str(s);
            n -= v;
        }
    }
    out
}

/// A Roman numeral after a capitalised word `before` (as written): the
/// words it is read as (module docs of [`CARDINAL_AFTER`]).
pub(super) fn roman_after(raw: &str, before: &str) -> Option<String> {
    if !before.starts_with(|c: char| c.is_ascii_uppercase()) || before.len() < 2 {
        return None;
    }
    let n = roman(raw)?;
    Some(if CARDINAL_AFTER.contains(&before.to_ascii_lowercase().as_str()) {
        crate::number::cardinal(n)
    } else {
        format!("the {}", crate::number::ordinal(n))
    })
}
