//! The sampler's random numbers: xoshiro256++ seeded through splitmix64.
//!
//! Small, fast, and fully specified here, so a `--seed` reproduces the same
//! audio on every platform and in every future version that keeps this file:
//! the state is `[splitmix64(seed) × 4]` (successive outputs of splitmix64
//! started at `seed`), and a uniform `f32` in `[0, 1)` is the top 24 bits of
//! one xoshiro256++ output times 2^-24.

/// A xoshiro256++ generator.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// The generator for `seed`.
    pub fn new(seed: u64) -> Self {
        let mut sm = dv_util::SplitMix64::new(seed);
        Self { s: [sm.next_u64(), sm.next_u64(), sm.next_u64(), sm.next_u64()] }
    }

    /// The xoshiro256++ state (for generators that continue this stream
    /// elsewhere, such as the GPU samplers).
    pub fn state(&self) -> [u64; 4] {
        self.s
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let out = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    /// Uniform in `[0, 1)`, on a grid of 2^-24.
    #[inline]
    pub fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }

    /// Standard normal (Box–Muller in f64), for random weights.
    pub fn normal(&mut self) -> f32 {
        let u1 = ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let u2 = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
    }
}
