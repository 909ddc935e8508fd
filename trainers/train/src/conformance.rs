//! The collective conformance suite: one set of checks that every
//! [`Collective`] implementation must pass, run by every rank of a group.
//! CI runs it on [`crate::LocalCollective`] threads; on GPU machines the
//! NCCL implementation runs the same function in one process per GPU
//! (`cargo run -p dv-nccl --example conformance`).

use dv_torch::tch::{Device, Kind, Tensor};

use crate::{Collective, BUCKET_FLOATS};

fn values(t: &Tensor) -> Result<Vec<f32>, String> {
    Vec::<f32>::try_from(&t.to_device(Device::Cpu).reshape([-1])).map_err(|e| e.to_string())
}

/// Runs every check on this rank's handle; returns the names of the checks
/// that passed, or the first failure.
pub fn run_suite(c: &mut dyn Collective, device: Device) -> Result<Vec<&'static str>, String> {
    let (rank, world) = (c.rank(), c.world_size());
    let n = world as f32;
    let tri = n * (n - 1.0) / 2.0;
    let mut passed = Vec::new();
    let opts = (Kind::Float, device);

    let mut t = Tensor::from_slice(&[rank as f32, 10.0 * rank as f32, 1.0]).to_device(device).reshape([3, 1]);
    c.all_reduce_sum(&mut t, "sum").map_err(|e| e.to_string())?;
    let got = values(&t)?;
    if got != vec![tri, 10.0 * tri, n] {
        return Err(format!("rank {rank}: all_reduce_sum gave {got:?}, expected {:?}", [tri, 10.0 * tri, n]));
    }
    passed.push("all_reduce_sum");

    let root = world - 1;
    let mut b = Tensor::full([5], rank as f64 + 100.0, opts);
    c.broadcast(&mut b, root, "broadcast").map_err(|e| e.to_string())?;
    let got = values(&b)?;
    if got != vec![root as f32 + 100.0; 5] {
        return Err(format!("rank {rank}: broadcast from {root} gave {got:?}"));
    }
    passed.push("broadcast");

    let mut acc = Tensor::ones([1], opts);
    for k in 0..50 {
        c.all_reduce_sum(&mut acc, &format!("ordered {k}")).map_err(|e| e.to_string())?;
        acc /= world as f64;
    }
    let got = values(&acc)?;
    if got != vec![1.0] {
        return Err(format!("rank {rank}: 50 ordered all-reduces gave {got:?}"));
    }
    passed.push("ordered_sequence");

    // Larger than a gradient bucket, with distinct values per element.
    let len = 3 * BUCKET_FLOATS as i64 + 7;
    let mut big = Tensor::arange(len, opts).fmod(1000.0) + (rank as f64 + 1.0);
    c.all_reduce_sum(&mut big, "large").map_err(|e| e.to_string())?;
    let want = Tensor::arange(len, opts).fmod(1000.0) * world as f64 + (n * (n + 1.0) / 2.0) as f64;
    let worst = (big - want).abs().max().double_value(&[]);
    if worst != 0.0 {
        return Err(format!("rank {rank}: large all-reduce off by {worst}"));
    }
    passed.push("large_all_reduce");
    Ok(passed)
}
