//! The unsafe quarantine: AVX2/FMA kernels and the two-thread pipeline's
//! shared buffers. Everything here is reached through [`Avx2`], a token
//! that only [`Avx2::detect`] constructs after checking the CPU, so the
//! `#[target_feature]` functions never run where the instructions are
//! missing. Every `unsafe` block names its invariant in a `// SAFETY:`
//! comment; the safe wrappers check every length they rely on.

pub(crate) mod avx2;
pub(crate) mod pipeline;

pub(crate) use avx2::Avx2;
