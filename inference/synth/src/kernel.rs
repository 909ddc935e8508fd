//! The closed set of kernels, chosen at run time.

use crate::simd::Avx2;

/// Which implementation runs the WaveNet step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// The scalar reference (`reference.rs`): FORMAT.md's equations as
    /// written, f32, sequential sums. The oracle of every other kernel.
    Scalar,
    /// Packed weights, AVX2 + FMA (x86-64 only, checked at run time).
    Avx2Fma,
}

impl Kernel {
    /// The fastest kernel the running CPU supports.
    pub fn detect() -> Self {
        if Avx2::detect().is_some() {
            Self::Avx2Fma
        } else {
            Self::Scalar
        }
    }

    /// Whether this kernel can run on this CPU.
    pub fn is_available(self) -> bool {
        match self {
            Self::Scalar => true,
            Self::Avx2Fma => Avx2::detect().is_some(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Scalar => "scalar",
            Self::Avx2Fma => "avx2-fma",
        }
    }
}
