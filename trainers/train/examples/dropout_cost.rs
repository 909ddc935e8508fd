//! Time of one dropout mask at the paper-size G2P's shapes (batch 64,
//! 20 steps, 2 × 1024 channels), on the CPU or on `cuda` when given:
//! `cargo run --release -p dv-train --example dropout_cost [cuda]`.
use std::time::Instant;

use dv_torch::tch;
use dv_torch::tch::{Device, Kind, Tensor};
use dv_train::dropout;

fn main() {
    tch::set_num_threads(1);
    let device = if std::env::args().nth(1).as_deref() == Some("cuda") { Device::Cuda(0) } else { Device::Cpu };
    let ids: Vec<usize> = (0..64).collect();
    let x = Tensor::ones([64, 20, 2048], (Kind::Float, device));
    let mut kept = 0.0;
    // warm-up
    for _ in 0..3 {
        kept = dropout(&x, 0.3, true, 1, 10, &ids).unwrap().double_value(&[0, 0, 0]);
    }
    let n = 20;
    let t = Instant::now();
    let mut sum = 0.0;
    for k in 0..n {
        sum += dropout(&x, 0.3, true, k, 10, &ids).unwrap().sum(Kind::Float).double_value(&[]);
    }
    let ms = t.elapsed().as_secs_f64() * 1e3 / n as f64;
    let frac = sum / n as f64 / (64.0 * 20.0 * 2048.0) * 0.7;
    println!("{device:?}: {ms:.2} ms per mask of 64 x 20 x 2048 (kept fraction {frac:.4}, first {kept})");
}
