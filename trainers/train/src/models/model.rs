//! What the trainer trains: a [`Model`] that turns a [`Batch`] into the
//! sum of its examples' losses. Summing (not averaging) lets the trainer
//! divide by the *global* batch size, so the gradients summed over ranks are
//! the gradients of the global batch's mean loss whatever the rank count.

use std::sync::Mutex;

use dv_torch::tch;
use dv_torch::tch::{nn, Device, Kind, Tensor};
use dv_util::splitmix64;

use crate::TrainError;

/// A padded batch of sequences with per-example lengths.
///
/// # Shapes
/// * `inputs`: `[b, t_max, features]` float32, zero past each length
/// * `input_lengths`: `b` frames
/// * `targets`: `[sum(target_lengths)]` int64, the examples' labels concatenated
/// * `target_lengths`: `b`
/// * `example_ids`: `b` dataset indices (seed per-example randomness)
#[derive(Debug)]
pub struct Batch {
    pub inputs: Tensor,
    pub input_lengths: Vec<i64>,
    pub targets: Tensor,
    pub target_lengths: Vec<i64>,
    pub example_ids: Vec<usize>,
    /// Seconds of audio the batch covers, when it is audio.
    pub audio_seconds: Option<f64>,
}

impl Batch {
    /// The same batch with its tensors on `device`. From page-locked host
    /// memory ([`Batch::pinned_for`]) the copies are queued without waiting.
    pub fn to_device(self, device: Device) -> Result<Batch, TrainError> {
        if self.inputs.device() == device && self.targets.device() == device {
            return Ok(self);
        }
        let inputs = self.inputs.f_to_device_(device, self.inputs.kind(), true, false)?;
        let targets = self.targets.f_to_device_(device, self.targets.kind(), true, false)?;
        Ok(Batch { inputs, targets, ..self })
    }

    /// A host batch in page-locked memory, so that its copy to the GPU
    /// `device` can overlap the step; as it was where that is not possible
    /// (no GPU, or pinning failed: the copy then simply waits).
    pub fn pinned_for(self, device: Device) -> Batch {
        if !device.is_cuda() || self.inputs.device() != Device::Cpu {
            return self;
        }
        match (self.inputs.f_pin_memory(device), self.targets.f_pin_memory(device)) {
            (Ok(inputs), Ok(targets)) => Batch { inputs, targets, ..self },
            _ => self,
        }
    }
}

/// A trainable model.
pub trait Model: Send {
    /// The parameters, in a fixed order, with their names.
    fn named_parameters(&self) -> Vec<(String, Tensor)>;
    /// Sum over the batch of each example's loss. `seed` makes dropout
    /// deterministic: it mixes with each example's id, so an example sees the
    /// same mask whichever rank reads it.
    fn loss_sum(&self, batch: &Batch, train: bool, seed: u64) -> Result<Tensor, TrainError>;
}

/// libtorch has one global generator; ranks running as threads draw their
/// dropout masks under this lock after seeding it, so masks are
/// deterministic and independent of thread timing.
static RNG: Mutex<()> = Mutex::new(());

/// Runs `f` holding the lock on libtorch's global generator, seeded with
/// `seed`: model initialisation and dropout masks draw through this, so ranks
/// running as threads never interleave their draws.
pub fn with_rng<T>(seed: u64, f: impl FnOnce() -> T) -> T {
    let _g = RNG.lock().unwrap_or_else(|e| e.into_inner());
    tch::manual_seed(seed as i64);
    f()
}

/// Inverted dropout on `[b, t, f]` activations with a mask drawn per
/// example from `(seed, example id, site)`, time-major, so an example's mask
/// on its frames is the same whichever rank holds it and however much
/// padding its batch has.
///
/// The mask is a hash of each element's index within its example and the
/// example's seed ([`dropout_keeps`] is its definition): on a GPU by integer
/// tensor ops on the device (no host work per example), on the CPU by a
/// plain loop; the same bits either way (a test checks). (It used to be drawn on the CPU per example from
/// libtorch's generator and copied over: 19.4 ms per mask of
/// 64 × 20 × 2048 on one dev VM thread, several per step of the paper-size
/// G2P on the GPU; `examples/dropout_cost.rs`.)
///
/// # Shapes
/// `x`: `[b, t, f]`; each example's mask is indexed `[t, f]`.
pub fn dropout(x: &Tensor, p: f64, train: bool, seed: u64, site: u64, ids: &[usize]) -> Result<Tensor, TrainError> {
    if !train || p <= 0.0 {
        return Ok(x.shallow_clone());
    }
    let size = x.size();
    let row = size[1..].iter().product::<i64>();
    if row > u32::MAX as i64 {
        // the hash indexes an example's elements with 32 bits
        return Err(TrainError::Shape {
            what: "dropout input",
            expected: "at most 2^32 - 1 elements per example".into(),
            got: format!("{size:?}"),
        });
    }
    let seeds: Vec<u64> = ids.iter().map(|&id| example_seed(seed, site, id)).collect();
    let keep = if x.device() == Device::Cpu {
        keep_mask_host(&seeds, row, p)
    } else {
        keep_mask_tensor(&seeds, row, p, x.device())?
    };
    let keep = keep.f_to_kind(x.kind())?.f_view(size.as_slice())?;
    Ok(x.f_mul(&keep)?.f_div_scalar(1.0 - p)?)
}

fn example_seed(seed: u64, site: u64, id: usize) -> u64 {
    splitmix64(seed ^ splitmix64(id as u64 ^ splitmix64(site)))
}

/// The keep mask `[b, row]` (1 kept, 0 dropped) by integer tensor ops on
/// `device`: the GPU path.
fn keep_mask_tensor(seeds: &[u64], row: i64, p: f64, device: Device) -> Result<Tensor, TrainError> {
    let seeds: Vec<i64> = seeds.iter().map(|&s| s as i64).collect();
    let seeds = Tensor::from_slice(&seeds).f_to_device(device)?.f_view([-1, 1])?;
    let lo = seeds.f_bitwise_and(LOW32)?;
    let hi = seeds.f_bitwise_right_shift_tensor_scalar(32)?.f_bitwise_and(LOW32)?;
    let index = Tensor::f_arange(row, (Kind::Int64, device))?.f_view([1, row])?;
    let u = mix32(&mix32(&index.f_bitwise_xor_tensor(&lo)?)?.f_bitwise_xor_tensor(&hi)?)?; // [b, row]
    Ok(u.f_bitwise_right_shift_tensor_scalar(8)?.f_ge(keep_threshold(p))?)
}

/// The same mask element by element on the host: the CPU path (there the
/// tensor ops took 85 ms for the `dropout_cost` example's mask where this
/// takes 9.6 ms, mask applied included) and the definition.
fn keep_mask_host(seeds: &[u64], row: i64, p: f64) -> Tensor {
    let threshold = keep_threshold(p) as u32;
    let mut keep = Vec::with_capacity(seeds.len() * row as usize);
    for &s in seeds {
        let (lo, hi) = (s as u32, (s >> 32) as u32);
        keep.extend((0..row as u32).map(|i| u8::from(mix32_host(mix32_host(i ^ lo) ^ hi) >> 8 >= threshold)));
    }
    Tensor::from_slice(&keep).f_view([seeds.len() as i64, row]).expect("a mask of b × row elements")
}

fn mix32_host(x: u32) -> u32 {
    let x = x ^ (x >> 16);
    let x = x.wrapping_mul(MIX_A as u32);
    let x = x ^ (x >> 15);
    let x = x.wrapping_mul(MIX_B as u32);
    x ^ (x >> 16)
}

const LOW32: i64 = 0xffff_ffff;
// Multipliers below 2^31, so that no product of a 32-bit value overflows an int64.
const MIX_A: i64 = 0x7feb_352d;
const MIX_B: i64 = 0x5bd1_e995;

/// An element is kept when the top 24 bits of its hash reach this.
fn keep_threshold(p: f64) -> i64 {
    (p * (1u64 << 24) as f64).ceil() as i64
}

/// The 32-bit mixer of [`dropout`] on int64 tensors holding values below 2^32.
fn mix32(x: &Tensor) -> Result<Tensor, TrainError> {
    let x = x.f_bitwise_xor_tensor(&x.f_bitwise_right_shift_tensor_scalar(16)?)?;
    let x = x.f_mul_scalar(MIX_A)?.f_bitwise_and(LOW32)?;
    let x = x.f_bitwise_xor_tensor(&x.f_bitwise_right_shift_tensor_scalar(15)?)?;
    let x = x.f_mul_scalar(MIX_B)?.f_bitwise_and(LOW32)?;
    Ok(x.f_bitwise_xor_tensor(&x.f_bitwise_right_shift_tensor_scalar(16)?)?)
}

/// Whether [`dropout`] keeps element `index` (time-major within the
/// example) of the example `id` at `site`: the scalar definition.
pub fn dropout_keeps(p: f64, seed: u64, site: u64, id: usize, index: u32) -> bool {
    let s = example_seed(seed, site, id);
    mix32_host(mix32_host(index ^ s as u32) ^ (s >> 32) as u32) >> 8 >= keep_threshold(p) as u32
}

/// The parameters of a var store sorted by name (the checkpoint order).
pub fn sorted_parameters(vs: &nn::VarStore) -> Vec<(String, Tensor)> {
    let mut v: Vec<(String, Tensor)> = vs.variables().into_iter().filter(|(_, t)| t.requires_grad()).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gpu_paths_tensor_ops_give_the_host_paths_bits() {
        let seeds = [0, 1, u64::MAX, 0x8000_0000_0000_0000, example_seed(7, 30, 123)];
        for p in [0.05, 0.3, 0.5] {
            let host = keep_mask_host(&seeds, 4099, p).to_kind(Kind::Int64);
            let ops = keep_mask_tensor(&seeds, 4099, p, Device::Cpu).unwrap().to_kind(Kind::Int64);
            assert!(host.equal(&ops), "p {p}: {} of {} differ", host.ne_tensor(&ops).sum(Kind::Int64), 5 * 4099);
        }
    }
}
