//! The sampling modes the kernels implement (`warp_sample` and `gumbel` in
//! `kernels/common.cuh`), the random state they start from, and the rule
//! each kernel draws by ([`DrawRule`], with its CPU replay).

use dv_synth::{Rng, Sampling};

use crate::error::GpuError;
use crate::model::A;

/// `SAMPLE_DIRECT`, `SAMPLE_MODE`, `SAMPLE_TEMPERATURE`,
/// `SAMPLE_VOICED_TEMPERATURE` in `common.cuh`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuSampling {
    pub mode: i32,
    /// 1 / τ (1 unless temperature sampling).
    pub inv_tau: f32,
}

/// `SAMPLE_VOICED_TEMPERATURE`: temperature where the step's conditioning
/// frame is voiced, direct sampling elsewhere (`step_mode` in `common.cuh`).
pub const VOICED_TEMPERATURE: i32 = 3;

impl GpuSampling {
    /// Direct, mode, temperature and voiced-only temperature sampling run
    /// on the GPU; mean and top-k are refused.
    pub fn new(s: Sampling) -> Result<Self, GpuError> {
        match s.validate()? {
            Sampling::Direct => Ok(Self { mode: 0, inv_tau: 1.0 }),
            Sampling::Mode => Ok(Self { mode: 1, inv_tau: 1.0 }),
            Sampling::Temperature(t) => Ok(Self { mode: 2, inv_tau: 1.0 / t }),
            Sampling::VoicedTemperature(t) => Ok(Self { mode: VOICED_TEMPERATURE, inv_tau: 1.0 / t }),
            other => Err(GpuError::Unsupported {
                what: format!(
                    "{other:?} sampling on the GPU (direct, mode, temperature and voiced-temperature run there)"
                ),
            }),
        }
    }

    /// Whether a sample draws a uniform from the stream's generator.
    pub fn draws(&self) -> bool {
        self.mode != 1
    }

    /// Whether the kernel reads each conditioning frame's voicing.
    pub fn reads_voicing(&self) -> bool {
        self.mode == VOICED_TEMPERATURE
    }

    /// The 1 / τ a sample of a frame that is (`voiced`) or is not voiced is
    /// drawn at (`step_mode`): 1 for direct sampling.
    pub fn inv_tau_for(&self, voiced: bool) -> f32 {
        match self.mode {
            2 => self.inv_tau,
            VOICED_TEMPERATURE if voiced => self.inv_tau,
            _ => 1.0,
        }
    }
}

/// The xoshiro256++ state of `dv_synth::Rng::new(seed)`, which the kernels
/// step exactly as `Rng::uniform` does (`rng_uniform` in `common.cuh`).
pub fn rng_state(seed: u64) -> [u64; 4] {
    dv_synth::Rng::new(seed).state()
}

/// How a kernel turns one step's distribution and its generator into a
/// sample under direct sampling (mode sampling draws nothing). Both rules
/// draw from the same distribution; a seed gives different samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrawRule {
    /// One uniform u per step (`Rng::uniform`), then the first class whose
    /// running sum of p passes u, as `dv_synth` does (`warp_sample`:
    /// kernels 1, 1b and 2).
    InverseCdf,
    /// One 64-bit generator output per step as the key of 256 noises
    /// ([`gumbel`]), then the argmax of ln p + noise, lowest class on ties
    /// (kernel 1c, `wavenet_chain`).
    GumbelMax,
}

impl DrawRule {
    /// The class a kernel following this rule draws from `p` (`[A]`), with
    /// `rng` stepped as the kernel steps its state: the CPU replay that
    /// checks a kernel's draws against its own probabilities.
    pub fn draw(self, p: &[f32; A], rng: &mut Rng) -> usize {
        self.draw_at(p, rng, 1.0)
    }

    /// [`DrawRule::draw`] from `p` sharpened to p^inv_tau (temperature
    /// 1 / inv_tau), as the kernels sample a temperature step: the inverse
    /// CDF of p^inv_tau renormalized (`warp_sample`), or the argmax of
    /// inv_tau · ln p + noise (`wavenet_chain`). `inv_tau` 1 is direct
    /// sampling.
    pub fn draw_at(self, p: &[f32; A], rng: &mut Rng, inv_tau: f32) -> usize {
        match self {
            Self::InverseCdf if inv_tau == 1.0 => dv_synth::direct(p, rng.uniform()) as usize,
            Self::InverseCdf => {
                let u = rng.uniform();
                let mut q = [0f32; A];
                let mut z = 0f32;
                for (qk, &pk) in q.iter_mut().zip(p) {
                    *qk = pk.powf(inv_tau);
                    z += *qk;
                }
                if !(z > 0.0 && z.is_finite()) {
                    // Every power underflowed: the kernel takes the mode.
                    return dv_synth::mode(p) as usize;
                }
                let iz = 1.0 / z;
                q.iter_mut().for_each(|v| *v *= iz);
                dv_synth::direct(&q, u) as usize
            }
            Self::GumbelMax => {
                let key = rng.next_u64();
                let mut best = (f32::NEG_INFINITY, 0);
                for (k, &pk) in p.iter().enumerate() {
                    let v = inv_tau * pk.ln() + gumbel(key, k);
                    if v > best.0 {
                        best = (v, k);
                    }
                }
                best.1
            }
        }
    }
}

/// The Gumbel noise of `class` for a step whose generator output is `key`,
/// as `gumbel` in `kernels/common.cuh` computes it (there with `lg2.approx`):
/// u = the top 24 bits of splitmix64(key + (class + 1)·φ), centred in its
/// cell so that 0 < u < 1, then −ln(−ln u). argmax over classes of
/// (logit + noise) is a draw from the softmax of the logits.
pub fn gumbel(key: u64, class: usize) -> f32 {
    let mut z = key.wrapping_add((class as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let u = ((z >> 40) as f64 + 0.5) / (1u64 << 24) as f64;
    (-(-u.ln()).ln()) as f32
}
