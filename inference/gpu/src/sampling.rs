//! The sampling modes the kernels implement (`warp_sample` in
//! `kernels/common.cuh`), and the random state they start from.

use dv_synth::Sampling;

use crate::error::GpuError;

/// `SAMPLE_DIRECT`, `SAMPLE_MODE`, `SAMPLE_TEMPERATURE` in `common.cuh`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuSampling {
    pub mode: i32,
    /// 1 / τ (1 unless temperature sampling).
    pub inv_tau: f32,
}

impl GpuSampling {
    /// Direct, mode and temperature sampling run on the GPU; mean and top-k
    /// are refused.
    pub fn new(s: Sampling) -> Result<Self, GpuError> {
        match s.validate()? {
            Sampling::Direct => Ok(Self { mode: 0, inv_tau: 1.0 }),
            Sampling::Mode => Ok(Self { mode: 1, inv_tau: 1.0 }),
            Sampling::Temperature(t) => Ok(Self { mode: 2, inv_tau: 1.0 / t }),
            other => Err(GpuError::Unsupported {
                what: format!("{other:?} sampling on the GPU (direct, mode and temperature run there)"),
            }),
        }
    }

    /// Whether a sample draws a uniform from the stream's generator.
    pub fn draws(&self) -> bool {
        self.mode != 1
    }
}

/// The xoshiro256++ state of `dv_synth::Rng::new(seed)`, which the kernels
/// step exactly as `Rng::uniform` does (`rng_uniform` in `common.cuh`).
pub fn rng_state(seed: u64) -> [u64; 4] {
    dv_synth::Rng::new(seed).state()
}
