//! Non-ASCII input to the ASCII the scanner reads.

/// Letters to their plain ASCII form, curly quotes to plain ones, dashes to
/// a spaced `--` (a hyphen between digits, as in `10–20`), the minus sign
/// to `-`; `£ € ¥ °` are kept for the scanner and anything else becomes a
/// space (emoji, other scripts).
pub(super) fn transliterate(raw: &str) -> Vec<char> {
    let mut out: Vec<char> = Vec::with_capacity(raw.len());
    let mut input = raw.chars().peekable();
    while let Some(c) = input.next() {
        let s: &str = match c {
            c if c.is_ascii() => {
                out.push(if c.is_ascii_control() { ' ' } else { c });
                continue;
            }
            '\u{2013}' | '\u{2212}'
                if out.last().is_some_and(|p| p.is_ascii_digit())
                    && input.peek().is_some_and(|n| n.is_ascii_digit()) =>
            {
                "-"
            }
            '\u{2212}' => "-",
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
            '£' | '€' | '¥' | '°' => {
                out.push(c);
                continue;
            }
            _ => " ",
        };
        out.extend(s.chars());
    }
    out
}
