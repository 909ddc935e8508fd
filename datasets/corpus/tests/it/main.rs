//! Integration tests of dv-corpus: every reader on fixtures in its real
//! layout, with the bad-input cases, and the embedded corpus recipe.

mod embedded;
mod fixture;
mod label;
mod layout;
mod pitch;
