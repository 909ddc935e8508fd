//! Integration tests of dv-text.

mod conditioning;
mod lexicon;
mod natural;
mod normalize;
mod phoneme;
