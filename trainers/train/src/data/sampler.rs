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
//!
//! Length bucketing ([`Buckets`], `[train] bucket_batches`): the epoch's
//! permutation is cut into windows of `window_batches × batch` examples, each
//! window is sorted by length (ties by position), cut into batches, and the
//! epoch's batches are then visited in a seeded random order. Batches hold
//! utterances of similar length, so less of each padded batch is padding;
//! the order is still a pure function of the seed, the step and the lengths.

/// Global batches over `len` examples.
#[derive(Debug, Clone)]
pub struct Sampler {
    pub len: usize,
    pub batch: usize,
    pub seed: u64,
}

/// splitmix64: a tiny, well-mixed generator for permutations and seeds.
pub use dv_util::splitmix64;

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
        self.rank_batch_in(step, rank, world, None)
    }

    /// [`Sampler::global_batch`], length-bucketed when `buckets` is given.
    pub fn global_batch_in(&self, step: u64, buckets: Option<&Buckets>) -> Vec<usize> {
        let Some(b) = buckets.filter(|b| b.window_batches > 0 && b.lengths.len() == self.len) else {
            return self.global_batch(step);
        };
        let per = self.batches_per_epoch().max(1);
        let (epoch, k) = (step / per, (step % per) as usize);
        let perm = self.permutation(epoch);
        // Visit the epoch's batches in a seeded order, so that long and
        // short batches interleave rather than follow the windows.
        let batch_order =
            Sampler { len: per as usize, batch: 1, seed: splitmix64(self.seed ^ 0x6275_636b) }.permutation(epoch);
        let j = batch_order[k];
        // Only the window holding batch j needs sorting (stable: equal
        // lengths keep their permutation order).
        let usable = per as usize * self.batch;
        let width = b.window_batches * self.batch;
        let start = (j * self.batch / width) * width;
        let mut window = perm[start..(start + width).min(usable)].to_vec();
        window.sort_by_key(|&i| std::cmp::Reverse(b.lengths[i]));
        let at = j * self.batch - start;
        window[at..at + self.batch].to_vec()
    }

    /// Rank `rank`'s slice of global batch `step`, length-bucketed when
    /// `buckets` is given.
    pub fn rank_batch_in(&self, step: u64, rank: usize, world: usize, buckets: Option<&Buckets>) -> Vec<usize> {
        let all = self.global_batch_in(step, buckets);
        let per = all.len() / world;
        all[rank * per..(rank + 1) * per].to_vec()
    }
}

/// Length bucketing (module docs): each example's length (frames), and how
/// many batches a sorting window holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Buckets {
    pub window_batches: usize,
    pub lengths: Vec<usize>,
}
