//! Integration tests of dv-featurize.
