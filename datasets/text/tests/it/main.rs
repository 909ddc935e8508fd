//! Integration tests of dv-text.

mod conditioning;
mod lexicon;
mod normalize;
mod phoneme;
