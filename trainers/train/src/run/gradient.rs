//! A step's gradients: zeroed before backward, summed over ranks after it
//! together with the step's loss sum, audio seconds and stop vote.
//!
//! Two paths give the same sums: with [`FlatParams`] the gradients and the
//! three numbers are one buffer and one all-reduce, with no host round trip
//! before it; without, the gradients are summed in buckets
//! ([`all_reduce_buckets`]) and the three numbers in a second all-reduce after
//! Adam's kernels are queued.

use dv_torch::tch;
use dv_torch::tch::{Device, Kind, Tensor};

use super::bucket::all_reduce_buckets;
use super::collective::Collective;
use super::optim::FlatParams;
use crate::TrainError;

/// What a step sums over ranks besides its gradients.
pub(super) struct StepSums<'a> {
    /// This rank's sum of example losses (a scalar on the model's device).
    pub loss_sum: &'a Tensor,
    /// Seconds of audio in this rank's slice of the batch.
    pub audio_seconds: f64,
    /// 1 when rank 0 was asked to stop (crate::run::stop), else 0.
    pub stop_vote: f64,
}

/// Zeroes the gradients before a step's backward.
pub(super) fn zero_grads(flat: Option<&FlatParams>, params: &[Tensor]) -> Result<(), TrainError> {
    match flat {
        Some(f) => {
            let _ = tch::no_grad(|| f.grads_and_extra.shallow_clone().f_zero_())?;
        }
        None => {
            for p in params {
                let mut g = p.grad();
                if g.defined() {
                    let _ = tch::no_grad(|| g.f_zero_())?;
                }
            }
        }
    }
    Ok(())
}

/// Sums the gradients over ranks; on the flat path `sums` ride along in the
/// buffer's three extra floats.
pub(super) fn sum_grads(
    coll: &mut dyn Collective,
    flat: Option<&FlatParams>,
    params: &[Tensor],
    sums: &StepSums<'_>,
) -> Result<(), TrainError> {
    let world = coll.world_size();
    match flat {
        // One collective, no host round trip before it: the gradients and the three numbers.
        Some(f) => {
            tch::no_grad(|| -> Result<(), TrainError> {
                let extra = f.extra()?;
                extra.f_narrow(0, 0, 1)?.f_copy_(&sums.loss_sum.f_detach()?.f_to_kind(Kind::Float)?.f_reshape([1])?)?;
                let _ = extra.f_narrow(0, 1, 1)?.f_fill_(sums.audio_seconds)?;
                let _ = extra.f_narrow(0, 2, 1)?.f_fill_(sums.stop_vote)?;
                Ok(())
            })?;
            if world > 1 {
                coll.all_reduce_sum(&mut f.grads_and_extra.shallow_clone(), "grads")?;
            }
        }
        None => {
            if world > 1 {
                let grads: Vec<Tensor> = params
                    .iter()
                    .map(|p| if p.grad().defined() { Ok(p.grad()) } else { p.f_zeros_like() })
                    .collect::<Result<_, _>>()?;
                all_reduce_buckets(coll, &grads, "grads")?;
            }
        }
    }
    Ok(())
}

/// `[loss sum, audio seconds, stop votes]` summed over ranks, on the CPU:
/// read after Adam's kernels are queued.
pub(super) fn summed(
    coll: &mut dyn Collective,
    flat: Option<&FlatParams>,
    sums: &StepSums<'_>,
) -> Result<Tensor, TrainError> {
    match flat {
        Some(f) => Ok(f.extra()?.f_to_device(Device::Cpu)?),
        None => {
            let mut stats = Tensor::from_slice(&[
                sums.loss_sum.f_to_device(Device::Cpu)?.double_value(&[]) as f32,
                sums.audio_seconds as f32,
                sums.stop_vote as f32,
            ]);
            coll.all_reduce_sum(&mut stats, "loss")?;
            Ok(stats)
        }
    }
}
