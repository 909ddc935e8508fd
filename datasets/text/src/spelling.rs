//! Letters read by name, for acronyms spelled out (`FBI` → `f b i`).
//!
//! Each letter is CMUDict's letter-name entry (the one a speller uses:
//! `a(2) EY1`, not the article `a AH0`). Spelled in a row, every letter's
//! primary stress but the last is made secondary, as CMUDict writes its
//! spelled acronyms (`fbi EH2 F B IY2 AY1`).

use crate::{Pronunciation, Stress, StressedPhoneme};

/// CMUDict's letter names, `a` to `z`.
const NAMES: [&str; 26] = [
    "EY1",
    "B IY1",
    "S IY1",
    "D IY1",
    "IY1",
    "EH1 F",
    "JH IY1",
    "EY1 CH",
    "AY1",
    "JH EY1",
    "K EY1",
    "EH1 L",
    "EH1 M",
    "EH1 N",
    "OW1",
    "P IY1",
    "K Y UW1",
    "AA1 R",
    "EH1 S",
    "T IY1",
    "Y UW1",
    "V IY1",
    "D AH1 B AH0 L Y UW0",
    "EH1 K S",
    "W AY1",
    "Z IY1",
];

/// The name of an ASCII letter (either case) as CMUDict says it alone
/// (`f` → `EH1 F`); `None` for any other character.
pub fn letter_name(c: char) -> Option<Pronunciation> {
    let i = (c.to_ascii_lowercase() as usize).checked_sub('a' as usize).filter(|_| c.is_ascii_alphabetic())?;
    Some(NAMES[i].split(' ').filter_map(|p| p.parse().ok()).collect())
}

/// Each letter of `letters` by name, in order, with the primary stress of
/// all but the last made secondary (module docs). Characters that are not
/// ASCII letters are skipped.
pub fn spell(letters: &str) -> Vec<Pronunciation> {
    let mut out: Vec<Pronunciation> = letters.chars().filter_map(letter_name).collect();
    let n = out.len();
    for p in out.iter_mut().take(n.saturating_sub(1)) {
        for sp in p.iter_mut().filter(|sp| sp.stress == Stress::Primary) {
            *sp = StressedPhoneme::new(sp.phoneme, Stress::Secondary);
        }
    }
    out
}
