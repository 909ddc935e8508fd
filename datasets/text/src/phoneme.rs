//! The phoneme inventory of Deep Voice App. A.3 and the phoneme-pair labels of
//! §3.2.

use std::fmt;
use std::str::FromStr;

use crate::TextError;

/// One of the 39 ARPABET phonemes of CMUDict, or silence (Deep Voice App. A.3:
/// "a 40-dimensional one-hot vector for phoneme identity (with 39 phonemes for
/// ARPABET phonemes and 1 for silence)").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phoneme {
    Aa,
    Ae,
    Ah,
    Ao,
    Aw,
    Ay,
    B,
    Ch,
    D,
    Dh,
    Eh,
    Er,
    Ey,
    F,
    G,
    Hh,
    Ih,
    Iy,
    Jh,
    K,
    L,
    M,
    N,
    Ng,
    Ow,
    Oy,
    P,
    R,
    S,
    Sh,
    T,
    Th,
    Uh,
    Uw,
    V,
    W,
    Y,
    Z,
    Zh,
    /// Silence: pauses, and the start and end of every utterance.
    Sil,
}

const SYMBOLS: [&str; 40] = [
    "AA", "AE", "AH", "AO", "AW", "AY", "B", "CH", "D", "DH", "EH", "ER", "EY", "F", "G", "HH", "IH", "IY", "JH", "K",
    "L", "M", "N", "NG", "OW", "OY", "P", "R", "S", "SH", "T", "TH", "UH", "UW", "V", "W", "Y", "Z", "ZH", "sil",
];

impl Phoneme {
    /// Number of phoneme classes: 39 ARPABET phonemes and silence.
    pub const COUNT: usize = 40;

    /// Every phoneme in one-hot order (the index of a phoneme is its position).
    pub const ALL: [Phoneme; 40] = [
        Phoneme::Aa,
        Phoneme::Ae,
        Phoneme::Ah,
        Phoneme::Ao,
        Phoneme::Aw,
        Phoneme::Ay,
        Phoneme::B,
        Phoneme::Ch,
        Phoneme::D,
        Phoneme::Dh,
        Phoneme::Eh,
        Phoneme::Er,
        Phoneme::Ey,
        Phoneme::F,
        Phoneme::G,
        Phoneme::Hh,
        Phoneme::Ih,
        Phoneme::Iy,
        Phoneme::Jh,
        Phoneme::K,
        Phoneme::L,
        Phoneme::M,
        Phoneme::N,
        Phoneme::Ng,
        Phoneme::Ow,
        Phoneme::Oy,
        Phoneme::P,
        Phoneme::R,
        Phoneme::S,
        Phoneme::Sh,
        Phoneme::T,
        Phoneme::Th,
        Phoneme::Uh,
        Phoneme::Uw,
        Phoneme::V,
        Phoneme::W,
        Phoneme::Y,
        Phoneme::Z,
        Phoneme::Zh,
        Phoneme::Sil,
    ];

    /// Position in the one-hot vector, `0..40`.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The phoneme at one-hot position `i`, if `i < 40`.
    pub fn from_index(i: usize) -> Option<Phoneme> {
        Self::ALL.get(i).copied()
    }

    /// The ARPABET symbol in CMUDict's upper case, or `sil`.
    pub fn symbol(self) -> &'static str {
        SYMBOLS[self.index()]
    }

    /// Whether the phoneme is a vowel (vowels carry stress in CMUDict).
    pub fn is_vowel(self) -> bool {
        use Phoneme::*;
        matches!(self, Aa | Ae | Ah | Ao | Aw | Ay | Eh | Er | Ey | Ih | Iy | Ow | Oy | Uh | Uw)
    }

    /// Parses a phone as festival and CMU ARCTIC labels write it: the radio
    /// phone set in lower case, where `ax` is the unstressed schwa (CMUDict's
    /// `AH0`) and `pau`, `h#` and `sil` are silence.
    pub fn from_festival(symbol: &str) -> Result<StressedPhoneme, TextError> {
        let lower = symbol.to_ascii_lowercase();
        match lower.as_str() {
            "pau" | "h#" | "sil" | "ssil" | "brth" => Ok(StressedPhoneme::new(Phoneme::Sil, Stress::None)),
            "ax" => Ok(StressedPhoneme::new(Phoneme::Ah, Stress::None)),
            _ => lower
                .to_ascii_uppercase()
                .parse::<Phoneme>()
                .map(|p| StressedPhoneme::new(p, Stress::None))
                .map_err(|_| TextError::UnknownPhoneme { symbol: symbol.to_string() }),
        }
    }
}

impl FromStr for Phoneme {
    type Err = TextError;

    /// Parses an ARPABET symbol without stress digit (`HH`, `ah`) or `sil`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // No allocation: a lexicon parses about a million of these.
        if s.eq_ignore_ascii_case("SIL") {
            return Ok(Phoneme::Sil);
        }
        SYMBOLS
            .iter()
            .position(|sym| sym.eq_ignore_ascii_case(s))
            .map(|i| Phoneme::ALL[i])
            .ok_or_else(|| TextError::UnknownPhoneme { symbol: s.to_string() })
    }
}

impl fmt::Display for Phoneme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// Stress level of a phoneme (Deep Voice App. A.3: "no stress, primary stress,
/// secondary stress, tertiary stress, and quaternary stress"). CMUDict marks
/// vowels 0, 1 or 2; tertiary and quaternary are always absent there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Stress {
    #[default]
    None,
    Primary,
    Secondary,
    Tertiary,
    Quaternary,
}

impl Stress {
    /// Number of stress classes in the one-hot vector.
    pub const COUNT: usize = 5;

    /// Position in the one-hot vector, `0..5`.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The stress of a CMUDict digit (`0` none, `1` primary, `2` secondary,
    /// `3`, `4` for corpora that mark the other two levels).
    pub fn from_digit(d: char) -> Option<Stress> {
        match d {
            '0' => Some(Stress::None),
            '1' => Some(Stress::Primary),
            '2' => Some(Stress::Secondary),
            '3' => Some(Stress::Tertiary),
            '4' => Some(Stress::Quaternary),
            _ => None,
        }
    }
}

/// A phoneme and its stress, the unit the duration, F0 and WaveNet models see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StressedPhoneme {
    pub phoneme: Phoneme,
    pub stress: Stress,
}

impl StressedPhoneme {
    pub fn new(phoneme: Phoneme, stress: Stress) -> Self {
        Self { phoneme, stress }
    }
}

impl FromStr for StressedPhoneme {
    type Err = TextError;

    /// Parses CMUDict notation: `AH0`, `EY1`, `HH`, `sil`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || TextError::UnknownPhoneme { symbol: s.to_string() };
        match s.chars().last() {
            Some(d) if d.is_ascii_digit() => {
                let stress = Stress::from_digit(d).ok_or_else(unknown)?;
                let phoneme: Phoneme = s[..s.len() - 1].parse().map_err(|_| unknown())?;
                Ok(Self { phoneme, stress })
            }
            Some(_) => Ok(Self { phoneme: s.parse()?, stress: Stress::None }),
            None => Err(unknown()),
        }
    }
}

impl fmt::Display for StressedPhoneme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.phoneme.is_vowel() {
            write!(f, "{}{}", self.phoneme, self.stress.index())
        } else {
            write!(f, "{}", self.phoneme)
        }
    }
}

/// A label of the segmentation model (Deep Voice §3.2): two neighbouring
/// phonemes. `sil HH EH L OW sil` has the pairs `(sil,HH) (HH,EH) (EH,L)
/// (L,OW) (OW,sil)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PhonemePair(pub Phoneme, pub Phoneme);

impl PhonemePair {
    /// Number of distinct pairs (the CTC blank comes on top of these).
    pub const COUNT: usize = Phoneme::COUNT * Phoneme::COUNT;

    /// Class index in `0..1600`: `first * 40 + second`.
    pub fn index(self) -> usize {
        self.0.index() * Phoneme::COUNT + self.1.index()
    }

    /// The pair of class index `i`, if `i < 1600`.
    pub fn from_index(i: usize) -> Option<PhonemePair> {
        let first = Phoneme::from_index(i / Phoneme::COUNT)?;
        let second = Phoneme::from_index(i % Phoneme::COUNT)?;
        (i < Self::COUNT).then_some(PhonemePair(first, second))
    }
}

impl fmt::Display for PhonemePair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},{})", self.0, self.1)
    }
}

/// The phoneme-pair label sequence of §3.2: every pair of neighbours, in
/// order. A sequence of `n` phonemes gives `n - 1` pairs (none for `n < 2`).
/// Callers add the leading and trailing silence; nothing is inserted here.
pub fn phoneme_pairs(phonemes: &[Phoneme]) -> Vec<PhonemePair> {
    phonemes.windows(2).map(|w| PhonemePair(w[0], w[1])).collect()
}
