//! One integration-test binary for dv-align: CPU references against brute
//! force, edge cases and errors; a GPU parity check where CUDA is present.
mod ctc;
mod gpu;
mod mas;
mod rng;
