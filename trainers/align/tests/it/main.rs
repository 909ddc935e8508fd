//! One integration-test binary for dv-align: CPU references against brute
//! force, edge cases and errors; the conformance suite over the CPU and (where
//! CUDA is present) the GPU aligners; a GPU parity check;
//! phoneme boundaries, TextGrids, boundary error and quarantine.
mod beam;
mod boundary;
mod conformance;
mod ctc;
mod gpu;
mod mas;
mod metrics;
mod pair_beam;
mod quarantine;
mod rng;
mod textgrid;
