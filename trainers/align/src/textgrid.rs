//! Praat TextGrids: the exchange format of phone alignments (Praat, the
//! Montreal Forced Aligner).
//!
//! Written in Praat's long text format (`File type = "ooTextFile"`), times
//! in seconds printed as the shortest decimal that reads back to the same
//! `f64`, so a write and a parse give the same grid bit for bit. Labels are
//! quoted with `"` doubled, as Praat does.
//!
//! The parser reads Praat's text format as Praat does, by its values: quoted
//! strings, numbers and `<flags>` in order, skipping the `name =` words, the
//! `[i]` indices and `!` comments. So it reads the long format (what we,
//! Praat and MFA write) and the short format alike. Interval tiers are kept;
//! point tiers (`TextTier`) are read and dropped. The binary format, other
//! object classes and UTF-16 files (decode them first) are not read.
use crate::AlignError;

/// The tier name this crate writes phone alignments under.
pub const PHONES_TIER: &str = "phones";

/// One labelled interval `[xmin, xmax]`, in seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    /// Start in seconds.
    pub xmin: f64,
    /// End in seconds (the next interval's start).
    pub xmax: f64,
    /// Label; empty for an unlabelled stretch.
    pub text: String,
}

/// A named tier of intervals.
#[derive(Clone, Debug, PartialEq)]
pub struct IntervalTier {
    /// Tier name (`"phones"`, `"words"`).
    pub name: String,
    /// Start of the tier in seconds.
    pub xmin: f64,
    /// End of the tier in seconds.
    pub xmax: f64,
    /// Intervals in time order. Written grids cover `[xmin, xmax]` with no
    /// gap; parsed ones are only checked to be ordered and not overlapping.
    pub intervals: Vec<Interval>,
}

/// A TextGrid's time range and interval tiers.
#[derive(Clone, Debug, PartialEq)]
pub struct TextGrid {
    /// Start in seconds.
    pub xmin: f64,
    /// End in seconds.
    pub xmax: f64,
    /// Interval tiers in file order.
    pub tiers: Vec<IntervalTier>,
}

impl TextGrid {
    /// One tier named [`PHONES_TIER`] over `[0, duration]` from `(label,
    /// start, end)` triples in seconds, in order. Gaps before, between and
    /// after the triples become intervals with an empty label.
    ///
    /// # Errors
    /// [`AlignError::InvalidValue`] for a duration that is not finite and
    /// positive; [`AlignError::InvalidInterval`] (tier 0, the triple's
    /// index) for a triple that is empty or reversed, overlaps the previous
    /// one, starts before 0 or ends after `duration`.
    pub fn from_phones<S: AsRef<str>>(phones: &[(S, f64, f64)], duration: f64) -> Result<TextGrid, AlignError> {
        if !(duration.is_finite() && duration > 0.0) {
            return Err(AlignError::InvalidValue { what: "duration (seconds, finite and > 0)", value: duration });
        }
        let mut intervals = Vec::with_capacity(2 * phones.len() + 1);
        let mut t = 0.0;
        for (index, (label, start, end)) in phones.iter().enumerate() {
            let (xmin, xmax) = (*start, *end);
            let reason = if !(xmin.is_finite() && xmax.is_finite()) {
                Some("times must be finite")
            } else if xmin >= xmax {
                Some("empty or reversed")
            } else if xmin < t {
                Some(if index == 0 { "starts before 0" } else { "overlaps the previous phone" })
            } else if xmax > duration {
                Some("ends after the duration")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(AlignError::InvalidInterval { tier: 0, index, xmin, xmax, reason });
            }
            if xmin > t {
                intervals.push(Interval { xmin: t, xmax: xmin, text: String::new() });
            }
            intervals.push(Interval { xmin, xmax, text: label.as_ref().to_owned() });
            t = xmax;
        }
        if t < duration {
            intervals.push(Interval { xmin: t, xmax: duration, text: String::new() });
        }
        let tier = IntervalTier { name: PHONES_TIER.to_owned(), xmin: 0.0, xmax: duration, intervals };
        Ok(TextGrid { xmin: 0.0, xmax: duration, tiers: vec![tier] })
    }

    /// The first tier named `name`.
    pub fn tier(&self, name: &str) -> Option<&IntervalTier> {
        self.tiers.iter().find(|t| t.name == name)
    }

    /// The grid in Praat's long text format.
    ///
    /// # Errors
    /// [`AlignError::InvalidValue`] for a non-finite or empty grid range;
    /// [`AlignError::InvalidInterval`] where a tier is not covered exactly
    /// by non-empty intervals (first starts at the tier's `xmin`, each
    /// starts where the previous ends, last ends at the tier's `xmax`), as
    /// Praat requires.
    pub fn to_long_text(&self) -> Result<String, AlignError> {
        self.check_covering()?;
        let mut s = String::with_capacity(256 + 96 * self.tiers.iter().map(|t| t.intervals.len()).sum::<usize>());
        s.push_str("File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\n");
        s.push_str(&format!("xmin = {} \nxmax = {} \n", self.xmin, self.xmax));
        if self.tiers.is_empty() {
            s.push_str("tiers? <absent> \n");
            return Ok(s);
        }
        s.push_str(&format!("tiers? <exists> \nsize = {} \nitem []: \n", self.tiers.len()));
        for (i, tier) in self.tiers.iter().enumerate() {
            s.push_str(&format!("    item [{}]:\n", i + 1));
            s.push_str("        class = \"IntervalTier\" \n");
            s.push_str(&format!("        name = \"{}\" \n", quote(&tier.name)));
            s.push_str(&format!("        xmin = {} \n        xmax = {} \n", tier.xmin, tier.xmax));
            s.push_str(&format!("        intervals: size = {} \n", tier.intervals.len()));
            for (k, iv) in tier.intervals.iter().enumerate() {
                s.push_str(&format!("        intervals [{}]:\n", k + 1));
                s.push_str(&format!("            xmin = {} \n            xmax = {} \n", iv.xmin, iv.xmax));
                s.push_str(&format!("            text = \"{}\" \n", quote(&iv.text)));
            }
        }
        Ok(s)
    }

    /// Reads a TextGrid in Praat's text format, long or short.
    ///
    /// # Errors
    /// [`AlignError::TextGridSyntax`] (with the line) where a value of the
    /// wrong kind, a malformed number, an unterminated string or the end of
    /// the text comes where the format needs something else, or where text
    /// follows the last tier; [`AlignError::Unsupported`] for another file
    /// type, object class or tier class; [`AlignError::InvalidInterval`]
    /// for an interval that is reversed or overlaps the previous one.
    pub fn parse(text: &str) -> Result<TextGrid, AlignError> {
        let mut lx = Lexer { s: text.strip_prefix('\u{feff}').unwrap_or(text).as_bytes(), pos: 0, line: 1 };
        let file_type = lx.string("the file type \"ooTextFile\"")?;
        if file_type != "ooTextFile" {
            return Err(AlignError::Unsupported { what: format!("TextGrid file type {file_type:?}") });
        }
        let class = lx.string("the object class \"TextGrid\"")?;
        if class != "TextGrid" {
            return Err(AlignError::Unsupported { what: format!("Praat object class {class:?}") });
        }
        let (xmin, xmax) = (lx.number("xmin")?, lx.number("xmax")?);
        let size = match lx.flag("<exists> or <absent>")? {
            "exists" => lx.count("the number of tiers")?,
            "absent" => 0,
            other => {
                let found = format!("<{other}>");
                return Err(AlignError::TextGridSyntax { line: lx.line, expected: "<exists> or <absent>", found });
            }
        };
        let mut tiers = Vec::new();
        for tier_index in 0..size {
            let class = lx.string("a tier class")?;
            let name = lx.string("a tier name")?;
            let (txmin, txmax) = (lx.number("tier xmin")?, lx.number("tier xmax")?);
            let n = lx.count("the number of intervals or points")?;
            match class.as_str() {
                "IntervalTier" => {
                    let mut intervals: Vec<Interval> = Vec::new();
                    for index in 0..n {
                        let (a, b) = (lx.number("interval xmin")?, lx.number("interval xmax")?);
                        let label = lx.string("an interval label")?;
                        let reason = if a > b {
                            Some("reversed")
                        } else if intervals.last().is_some_and(|p| a < p.xmax) {
                            Some("overlaps the previous interval")
                        } else {
                            None
                        };
                        if let Some(reason) = reason {
                            return Err(AlignError::InvalidInterval {
                                tier: tier_index,
                                index,
                                xmin: a,
                                xmax: b,
                                reason,
                            });
                        }
                        intervals.push(Interval { xmin: a, xmax: b, text: label });
                    }
                    tiers.push(IntervalTier { name, xmin: txmin, xmax: txmax, intervals });
                }
                "TextTier" => {
                    for _ in 0..n {
                        lx.number("point time")?;
                        lx.string("a point mark")?;
                    }
                }
                other => return Err(AlignError::Unsupported { what: format!("TextGrid tier class {other:?}") }),
            }
        }
        if let Some(tok) = lx.next()? {
            return Err(AlignError::TextGridSyntax {
                line: lx.line,
                expected: "the end of the text",
                found: tok.describe(),
            });
        }
        Ok(TextGrid { xmin, xmax, tiers })
    }

    /// Praat's invariants for writing: finite, non-empty ranges covered
    /// exactly by non-empty intervals.
    fn check_covering(&self) -> Result<(), AlignError> {
        if !(self.xmin.is_finite() && self.xmax.is_finite() && self.xmin < self.xmax) {
            return Err(AlignError::InvalidValue {
                what: "TextGrid xmax (finite, above a finite xmin)",
                value: self.xmax,
            });
        }
        for (tier, t) in self.tiers.iter().enumerate() {
            let mut at = t.xmin;
            for (index, iv) in t.intervals.iter().enumerate() {
                let (xmin, xmax) = (iv.xmin, iv.xmax);
                let reason = if !(xmin.is_finite() && xmax.is_finite()) {
                    Some("times must be finite")
                } else if xmin != at {
                    Some("does not start where the previous interval (or the tier) ends")
                } else if xmin >= xmax {
                    Some("empty or reversed")
                } else {
                    None
                };
                if let Some(reason) = reason {
                    return Err(AlignError::InvalidInterval { tier, index, xmin, xmax, reason });
                }
                at = xmax;
            }
            if t.intervals.is_empty() || at != t.xmax {
                let (index, xmin) = (t.intervals.len(), at);
                let reason = "the intervals do not reach the tier's end";
                return Err(AlignError::InvalidInterval { tier, index, xmin, xmax: t.xmax, reason });
            }
        }
        Ok(())
    }
}

/// A label with `"` doubled, Praat's escape inside a quoted string.
fn quote(s: &str) -> String {
    s.replace('"', "\"\"")
}

/// One value of Praat's text format.
enum Token<'a> {
    Str(String),
    Num(f64),
    Flag(&'a str),
}

impl Token<'_> {
    fn describe(&self) -> String {
        match self {
            Token::Str(s) => format!("the string {s:?}"),
            Token::Num(v) => format!("the number {v}"),
            Token::Flag(f) => format!("<{f}>"),
        }
    }
}

/// Splits Praat text into values. Works on bytes: every delimiter is ASCII,
/// so each slice it takes of the `&str` it came from is valid UTF-8.
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
    line: usize,
}

impl<'a> Lexer<'a> {
    fn bump(&mut self) -> Option<u8> {
        let c = *self.s.get(self.pos)?;
        self.pos += 1;
        if c == b'\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn text(&self, a: usize, b: usize) -> &'a str {
        // Both ends sit next to ASCII bytes (or the ends of the text).
        std::str::from_utf8(&self.s[a..b]).unwrap_or("")
    }

    fn syntax(&self, expected: &'static str, found: String) -> AlignError {
        AlignError::TextGridSyntax { line: self.line, expected, found }
    }

    /// The next value, skipping words, `[...]` indices and `!` comments.
    fn next(&mut self) -> Result<Option<Token<'a>>, AlignError> {
        loop {
            let Some(&c) = self.s.get(self.pos) else { return Ok(None) };
            match c {
                b'"' => {
                    self.bump();
                    let mut out = String::new();
                    let mut from = self.pos;
                    loop {
                        match self.bump() {
                            None => return Err(self.syntax("a closing quote", "the end of the text".into())),
                            Some(b'"') if self.s.get(self.pos) == Some(&b'"') => {
                                out.push_str(self.text(from, self.pos));
                                self.bump();
                                from = self.pos;
                            }
                            Some(b'"') => {
                                out.push_str(self.text(from, self.pos - 1));
                                return Ok(Some(Token::Str(out)));
                            }
                            Some(_) => {}
                        }
                    }
                }
                b'<' => {
                    self.bump();
                    let from = self.pos;
                    while !matches!(self.bump(), Some(b'>')) {
                        if self.pos >= self.s.len() {
                            return Err(self.syntax("a closing '>'", "the end of the text".into()));
                        }
                    }
                    return Ok(Some(Token::Flag(self.text(from, self.pos - 1))));
                }
                b'[' => while !matches!(self.bump(), Some(b']') | None) {},
                b'!' => while !matches!(self.bump(), Some(b'\n') | None) {},
                b'0'..=b'9' | b'-' | b'+' | b'.' => {
                    let from = self.pos;
                    while self.s.get(self.pos).is_some_and(|c| !c.is_ascii_whitespace()) {
                        self.bump();
                    }
                    let word = self.text(from, self.pos);
                    return match word.parse::<f64>() {
                        Ok(v) if v.is_finite() => Ok(Some(Token::Num(v))),
                        _ => Err(self.syntax("a finite number", format!("{word:?}"))),
                    };
                }
                c if c.is_ascii_whitespace() => {
                    self.bump();
                }
                _ => {
                    while self.s.get(self.pos).is_some_and(|c| !c.is_ascii_whitespace() && !b"\"<[!".contains(c)) {
                        self.bump();
                    }
                }
            }
        }
    }

    fn expect(&mut self, expected: &'static str) -> Result<Token<'a>, AlignError> {
        self.next()?.ok_or_else(|| self.syntax(expected, "the end of the text".into()))
    }

    fn string(&mut self, expected: &'static str) -> Result<String, AlignError> {
        match self.expect(expected)? {
            Token::Str(s) => Ok(s),
            other => Err(self.syntax(expected, other.describe())),
        }
    }

    fn number(&mut self, expected: &'static str) -> Result<f64, AlignError> {
        match self.expect(expected)? {
            Token::Num(v) => Ok(v),
            other => Err(self.syntax(expected, other.describe())),
        }
    }

    fn flag(&mut self, expected: &'static str) -> Result<&'a str, AlignError> {
        match self.expect(expected)? {
            Token::Flag(f) => Ok(f),
            other => Err(self.syntax(expected, other.describe())),
        }
    }

    /// A non-negative whole number. Nothing is allocated from it up front,
    /// so a corrupt count costs an error at the end of the text, not memory.
    fn count(&mut self, expected: &'static str) -> Result<usize, AlignError> {
        let v = self.number(expected)?;
        if v < 0.0 || v.fract() != 0.0 || v > u32::MAX as f64 {
            return Err(self.syntax(expected, format!("{v}")));
        }
        Ok(v as usize)
    }
}
