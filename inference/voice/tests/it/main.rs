//! Integration tests of dv-voice: round trips, and every way a package is
//! refused (each error must name the key or tensor at fault).

mod catalog;
mod duration;
mod g2p;
mod package;
