//! What the trainer trains: a [`Model`] that turns a [`Batch`] into the
//! sum of its examples' losses. Summing (not averaging) lets the trainer
//! divide by the *global* batch size, so the gradients summed over ranks are
//! the gradients of the global batch's mean loss whatever the rank count.

use std::sync::Mutex;

use tch::{nn, Device, Kind, Tensor};

use crate::sampler::splitmix64;
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
    /// The same batch with its tensors on `device`.
    pub fn to_device(self, device: Device) -> Result<Batch, TrainError> {
        if self.inputs.device() == device && self.targets.device() == device {
            return Ok(self);
        }
        Ok(Batch { inputs: self.inputs.f_to_device(device)?, targets: self.targets.f_to_device(device)?, ..self })
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
/// # Shapes
/// `x`: `[b, t, f]`; each example's mask is drawn as `[t, f]`.
pub fn dropout(x: &Tensor, p: f64, train: bool, seed: u64, site: u64, ids: &[usize]) -> Result<Tensor, TrainError> {
    if !train || p <= 0.0 {
        return Ok(x.shallow_clone());
    }
    let row: Vec<i64> = x.size()[1..].to_vec();
    let mut masks = Vec::with_capacity(ids.len());
    for &id in ids {
        let mask_seed = splitmix64(seed ^ splitmix64(id as u64 ^ splitmix64(site)));
        masks.push(with_rng(mask_seed, || Tensor::f_rand(row.as_slice(), (Kind::Float, Device::Cpu)))?);
    }
    let keep = Tensor::f_stack(&masks, 0)?.f_ge(p)?.f_to_kind(x.kind())?.f_to_device(x.device())?;
    Ok(x.f_mul(&keep)?.f_div_scalar(1.0 - p)?)
}

/// The parameters of a var store sorted by name (the checkpoint order).
pub fn sorted_parameters(vs: &nn::VarStore) -> Vec<(String, Tensor)> {
    let mut v: Vec<(String, Tensor)> = vs.variables().into_iter().filter(|(_, t)| t.requires_grad()).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}
