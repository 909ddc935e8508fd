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

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The xoshiro256++ state of `dv_synth::Rng::new(seed)`, which the kernels
/// step exactly as `Rng::uniform` does.
pub fn rng_state(seed: u64) -> [u64; 4] {
    let mut sm = seed;
    [splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm)]
}

/// `Rng::uniform` on a raw state (the kernels' `rng_uniform`), for tests.
pub fn uniform(s: &mut [u64; 4]) -> f32 {
    let out = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
    let t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = s[3].rotate_left(45);
    (out >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
}
