//! The deterministic data order: which examples make up global batch `s`,
//! and which of them each rank reads.
//!
//! Epoch `e` visits the examples in a permutation drawn from `(seed, e)`
//! alone; global batch `s` is the next `batch` examples of that stream
//! (batches never straddle epochs: an epoch's tail shorter than a batch is
//! dropped, as `drop_last` does). Rank `r` of `w` reads the `r`-th of `w`
//! equal slices. Everything is a pure function of the step, so resuming at
//! step `s` needs no sampler state beyond `s`, and the global batch does not
//! depend on the number of ranks.

/// Global batches over `len` examples.
#[derive(Debug, Clone)]
pub struct Sampler {
    pub len: usize,
    pub batch: usize,
    pub seed: u64,
}

/// splitmix64: a tiny, well-mixed generator for permutations and seeds.
pub fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Sampler {
    /// Batches per epoch.
    pub fn batches_per_epoch(&self) -> u64 {
        (self.len / self.batch.max(1)) as u64
    }

    /// The permutation of epoch `epoch` (Fisher–Yates).
    pub fn permutation(&self, epoch: u64) -> Vec<usize> {
        let mut p: Vec<usize> = (0..self.len).collect();
        let mut state = splitmix64(self.seed ^ splitmix64(epoch));
        for i in (1..p.len()).rev() {
            state = splitmix64(state);
            let j = (state % (i as u64 + 1)) as usize;
            p.swap(i, j);
        }
        p
    }

    /// The examples of global batch `step`.
    pub fn global_batch(&self, step: u64) -> Vec<usize> {
        let per = self.batches_per_epoch().max(1);
        let (epoch, k) = (step / per, (step % per) as usize);
        self.permutation(epoch)[k * self.batch..(k + 1) * self.batch].to_vec()
    }

    /// Rank `rank`'s slice of global batch `step` among `world` ranks.
    pub fn rank_batch(&self, step: u64, rank: usize, world: usize) -> Vec<usize> {
        let all = self.global_batch(step);
        let per = all.len() / world;
        all[rank * per..(rank + 1) * per].to_vec()
    }
}
