//! The collective conformance suite: one set of checks that every
//! [`Collective`] implementation must pass, run by every rank of a group.
//! CI runs it on [`crate::LocalCollective`] threads; on GPU machines the
//! NCCL implementation runs the same function in one process per GPU
//! (`cargo run -p dv-nccl --example conformance`).

use dv_torch::tch::{Device, Kind, TchError, Tensor};

use crate::{Collective, CollectiveError, BUCKET_FLOATS};

/// Why a rank failed the suite: the first check that did not pass.
#[derive(Debug, thiserror::Error)]
pub enum ConformanceError {
    /// A collective call failed (a peer died, stalled or disagreed).
    #[error(transparent)]
    Collective(#[from] CollectiveError),
    /// A result could not be copied back to the CPU.
    #[error("rank {rank}: reading the result of {check}: {source}")]
    Read {
        rank: usize,
        check: &'static str,
        #[source]
        source: TchError,
    },
    /// A collective returned other values than the check expects.
    #[error("rank {rank}: {check}: {found}")]
    Wrong { rank: usize, check: &'static str, found: String },
}

fn values(t: &Tensor, rank: usize, check: &'static str) -> Result<Vec<f32>, ConformanceError> {
    let flat = t.to_device(Device::Cpu).reshape([-1]);
    Vec::<f32>::try_from(&flat).map_err(|source| ConformanceError::Read { rank, check, source })
}

/// Runs every check on this rank's handle; returns the names of the checks
/// that passed, or the first failure.
pub fn run_suite(c: &mut dyn Collective, device: Device) -> Result<Vec<&'static str>, ConformanceError> {
    let (rank, world) = (c.rank(), c.world_size());
    let n = world as f32;
    let tri = n * (n - 1.0) / 2.0;
    let mut passed = Vec::new();
    let opts = (Kind::Float, device);

    let mut t = Tensor::from_slice(&[rank as f32, 10.0 * rank as f32, 1.0]).to_device(device).reshape([3, 1]);
    c.all_reduce_sum(&mut t, "sum")?;
    let check = "all_reduce_sum";
    let got = values(&t, rank, check)?;
    if got != vec![tri, 10.0 * tri, n] {
        let found = format!("gave {got:?}, expected {:?}", [tri, 10.0 * tri, n]);
        return Err(ConformanceError::Wrong { rank, check, found });
    }
    passed.push(check);

    let root = world - 1;
    let mut b = Tensor::full([5], rank as f64 + 100.0, opts);
    c.broadcast(&mut b, root, "broadcast")?;
    let check = "broadcast";
    let got = values(&b, rank, check)?;
    if got != vec![root as f32 + 100.0; 5] {
        return Err(ConformanceError::Wrong { rank, check, found: format!("from {root} gave {got:?}") });
    }
    passed.push(check);

    let mut acc = Tensor::ones([1], opts);
    for k in 0..50 {
        c.all_reduce_sum(&mut acc, &format!("ordered {k}"))?;
        acc /= world as f64;
    }
    let check = "ordered_sequence";
    let got = values(&acc, rank, check)?;
    if got != vec![1.0] {
        return Err(ConformanceError::Wrong { rank, check, found: format!("50 ordered all-reduces gave {got:?}") });
    }
    passed.push(check);

    // Larger than a gradient bucket, with distinct values per element.
    let len = 3 * BUCKET_FLOATS as i64 + 7;
    let mut big = Tensor::arange(len, opts).fmod(1000.0) + (rank as f64 + 1.0);
    c.all_reduce_sum(&mut big, "large")?;
    let want = Tensor::arange(len, opts).fmod(1000.0) * world as f64 + (n * (n + 1.0) / 2.0) as f64;
    let worst = (big - want).abs().max().double_value(&[]);
    if worst != 0.0 {
        return Err(ConformanceError::Wrong { rank, check: "large_all_reduce", found: format!("off by {worst}") });
    }
    passed.push("large_all_reduce");
    Ok(passed)
}
