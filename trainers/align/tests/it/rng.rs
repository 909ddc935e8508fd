//! SplitMix64 (Steele, Lea & Flood 2014): a small, seeded, deterministic
//! generator for tests and the GPU example (no `rand` needed).

pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }

    /// Uniform in `[0, 1)` with 24 random bits (exact in f32).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// A log-likelihood-like value in `[-10, 0)`.
    pub fn log_like(&mut self) -> f32 {
        -10.0 * self.unit() - f32::EPSILON
    }

    /// A small integer in `-range..=0` as f32: sums are exact and ties frequent.
    pub fn int(&mut self, range: usize) -> f32 {
        -(self.range(0, range) as f32)
    }
}
