//! Integration tests of dv-text.

mod lexicon;
mod normalize;
mod phoneme;
