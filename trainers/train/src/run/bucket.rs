//! Collectives over many tensors, in flat buckets: the gradients' all-reduce
//! when they are not in one flat buffer, and rank 0's parameters and Adam
//! moments broadcast at start.

use dv_torch::tch;
use dv_torch::tch::Tensor;

use super::collective::Collective;
use crate::TrainError;

/// Gradients are all-reduced in flat buckets of at most this many floats (4 MiB).
pub const BUCKET_FLOATS: usize = 1 << 20;

/// Sums tensors over ranks in flat buckets of at most [`BUCKET_FLOATS`].
pub(super) fn all_reduce_buckets(coll: &mut dyn Collective, tensors: &[Tensor], what: &str) -> Result<(), TrainError> {
    let mut start = 0;
    let mut bucket = 0;
    while start < tensors.len() {
        let mut end = start;
        let mut floats = 0;
        while end < tensors.len() && (end == start || floats + tensors[end].numel() <= BUCKET_FLOATS) {
            floats += tensors[end].numel();
            end += 1;
        }
        let flat: Vec<Tensor> = tensors[start..end].iter().map(|t| t.f_reshape([-1])).collect::<Result<_, _>>()?;
        let mut flat = Tensor::f_cat(&flat, 0)?;
        coll.all_reduce_sum(&mut flat, &format!("{what}[{bucket}]"))?;
        let mut off = 0;
        tch::no_grad(|| -> Result<(), TrainError> {
            for t in &tensors[start..end] {
                let n = t.numel() as i64;
                let mut dst = t.shallow_clone();
                dst.f_copy_(&flat.f_narrow(0, off, n)?.f_view(t.size().as_slice())?)?;
                off += n;
            }
            Ok(())
        })?;
        start = end;
        bucket += 1;
    }
    Ok(())
}

/// Copies rank `root`'s tensors to every rank, bucketed.
pub(super) fn broadcast_buckets(coll: &mut dyn Collective, tensors: &[Tensor], what: &str) -> Result<(), TrainError> {
    for (k, t) in tensors.iter().enumerate() {
        let mut t = t.shallow_clone();
        tch::no_grad(|| coll.broadcast(&mut t, 0, &format!("{what}[{k}]")))?;
    }
    Ok(())
}
