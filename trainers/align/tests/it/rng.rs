//! Random test inputs from SplitMix64 ([`dv_util::SplitMix64`]): small,
//! seeded and deterministic, for the tests and the GPU example (no `rand`
//! needed).

pub struct SplitMix64(dv_util::SplitMix64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(dv_util::SplitMix64::new(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
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
