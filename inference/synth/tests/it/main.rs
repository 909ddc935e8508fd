//! Integration tests of dv-synth: every fast kernel against the scalar
//! reference on every Table 2 size, the conditioning network against a
//! naive implementation, the duration and G2P models against a naive
//! PyTorch-semantics GRU, the G2P beam search's contracts, and the
//! sampler's contracts (teacher forcing, receptive field, streaming,
//! sampling modes, approximations, int16).

mod conditioning;
mod duration;
mod g2p;
mod model;
mod nonlinear;
mod parity;
mod quant;
mod sampling;

use dv_synth::{Kernel, Nonlinearity, Precision, SamplerOptions};

/// The AVX2 kernel, or `None` (with a note) on a CPU without AVX2/FMA.
pub fn avx2_or_note(test: &str) -> Option<Kernel> {
    if Kernel::Avx2Fma.is_available() {
        Some(Kernel::Avx2Fma)
    } else {
        eprintln!("note: {test}: this CPU lacks AVX2/FMA, the avx2-fma half of the test is skipped");
        None
    }
}

pub fn opts(precision: Precision, nonlinearity: Nonlinearity, threads: usize) -> SamplerOptions {
    SamplerOptions { precision, nonlinearity, threads }
}

pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}
