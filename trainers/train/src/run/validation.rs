//! The held-out loss, every rank taking a share of each batch.

use dv_torch::tch;
use dv_torch::tch::{Device, Kind, Tensor};

use super::collective::Collective;
use crate::data::dataset::Dataset;
use crate::models::model::Model;
use crate::TrainError;

/// Mean loss over a dataset, every rank taking a share of each batch.
pub(super) fn validate(
    model: &dyn Model,
    data: &dyn Dataset,
    batch: usize,
    coll: &mut dyn Collective,
    device: Device,
    seed: u64,
) -> Result<f64, TrainError> {
    let (rank, world) = (coll.rank(), coll.world_size());
    let mut sum = Tensor::from_slice(&[0.0f32]);
    let mut start = 0;
    while start < data.len() {
        let end = (start + batch).min(data.len());
        let mine: Vec<usize> = (start..end).filter(|i| i % world == rank).collect();
        if !mine.is_empty() {
            let b = data.batch(&mine, device)?;
            let l = tch::no_grad(|| model.loss_sum(&b, false, seed))?;
            sum = sum.f_add(&l.f_to_device(Device::Cpu)?.f_to_kind(Kind::Float)?)?;
        }
        start = end;
    }
    coll.all_reduce_sum(&mut sum, "validation loss")?;
    Ok(sum.double_value(&[0]) / data.len() as f64)
}
