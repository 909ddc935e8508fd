//! One integration-test binary for dv-align: CPU references against brute
//! force, edge cases and errors; a GPU parity check where CUDA is present;
//! phoneme boundaries, TextGrids, boundary error and quarantine.
mod beam;
mod boundary;
mod ctc;
mod gpu;
mod mas;
mod metrics;
mod pair_beam;
mod quarantine;
mod rng;
mod textgrid;
