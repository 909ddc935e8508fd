//! Integration tests of dv-audio: header probing on well-formed and broken
//! files of every kind a corpus holds.

mod probe;
