//! Phone numbers, read digit by digit: `555-1234`, `555-123-4567`,
//! `1-800-555-1234`, `(555) 123-4567`, `555.123.4567`, and the like
//! (`123-45-6789`).

use super::scanner::Scanner;
use super::token::Pause;
use crate::number::digits;

/// Digit groups of phone numbers: `555-1234`, `555-123-4567`,
/// `1-800-555-1234`, and `123-45-6789` (groups joined by `-` or `.`).
const PHONE_GROUPS: &[&[usize]] = &[&[3, 4], &[3, 3, 4], &[1, 3, 3, 4], &[3, 2, 4]];

impl Scanner {
    /// A phone number at `pos` (`PHONE_GROUPS`, or `(555) 123-4567`): read
    /// digit by digit, a short pause between groups.
    pub(super) fn scan_phone(&mut self) -> bool {
        let mut i = self.pos;
        let mut groups: Vec<(usize, usize)> = Vec::new();
        if self.at(i) == Some('(') {
            match self.digits_at(i + 1, 3) {
                Some((_, 3)) if self.at(i + 4) == Some(')') && self.at(i + 5) == Some(' ') => {
                    groups.push((i + 1, 3));
                    i += 6;
                }
                _ => return false,
            }
        } else if self.prev().is_some_and(|c| c.is_ascii_digit() || c == '-' || c == '.') {
            return false;
        }
        let first = groups.len();
        let mut sep = None;
        while let Some((_, n)) = self.digits_at(i, 4) {
            groups.push((i, n));
            i += n;
            match self.at(i) {
                Some(c @ ('-' | '.'))
                    if self.at(i + 1).is_some_and(|d| d.is_ascii_digit()) && sep.unwrap_or(c) == c =>
                {
                    sep = Some(c);
                    i += 1;
                }
                _ => break,
            }
        }
        let shape: Vec<usize> = groups.iter().map(|(_, n)| *n).collect();
        // `555.1234` is a decimal; dots join only the long forms.
        let dotted_short = sep == Some('.') && shape.len() < 3;
        let fits =
            !dotted_short && if first == 1 { shape[1..] == [3, 4] } else { PHONE_GROUPS.contains(&shape.as_slice()) };
        if !fits || self.at(i).is_some_and(|c| c.is_ascii_alphanumeric()) {
            return false;
        }
        for (k, (start, n)) in groups.into_iter().enumerate() {
            if k > 0 {
                self.pause(Pause::Short);
            }
            let d: String = self.chars[start..start + n].iter().collect();
            self.words(&digits(&d));
        }
        self.pos = i;
        true
    }
}
