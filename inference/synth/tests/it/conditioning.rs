//! The conditioning network against a naive implementation written here
//! from FORMAT.md: each direction a plain loop, the backward direction by
//! reversing the sequence, running forward and reversing back.

use dv_synth::random::{random_config, random_voice, random_weights};
use dv_synth::{ConditioningNetwork, Rng};
use dv_voice::{Voice, WavenetConfig};

fn get<'a>(v: &'a Voice, name: &str) -> &'a [f32] {
    v.tensor(name).unwrap().data()
}

fn matvec(w: &[f32], x: &[f32]) -> Vec<f32> {
    w.chunks(x.len()).map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum()).collect()
}

fn sig(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// One forward-direction QRNN over `xs` (each `[D]`), f32 throughout.
fn qrnn_forward(v: &Voice, prefix: &str, xs: &[Vec<f32>], h: usize) -> Vec<Vec<f32>> {
    let (wp, wc, b) =
        (get(v, &format!("{prefix}.w_prev")), get(v, &format!("{prefix}.w_cur")), get(v, &format!("{prefix}.bias")));
    let d = xs[0].len();
    let mut prev = vec![0.0f32; d];
    let mut c = vec![0.0f32; h];
    let mut out = Vec::new();
    for x in xs {
        let a: Vec<f32> = matvec(wp, &prev).iter().zip(matvec(wc, x)).zip(b).map(|((p, q), bb)| p + q + bb).collect();
        let mut z = vec![0.0f32; h];
        for j in 0..h {
            let (cand, o, f) = (a[j].tanh(), sig(a[h + j]), sig(a[2 * h + j]));
            c[j] = f * c[j] + (1.0 - f) * cand;
            z[j] = o * c[j];
        }
        out.push(z);
        prev = x.clone();
    }
    out
}

fn naive(v: &Voice, features: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let c = v.config().conditioning;
    let h = c.hidden;
    let mut xs = features.to_vec();
    for k in 0..c.qrnn_layers {
        let fwd = qrnn_forward(v, &format!("cond.qrnn.{k}.fwd"), &xs, h);
        let rev: Vec<Vec<f32>> = xs.iter().rev().cloned().collect();
        let mut bwd = qrnn_forward(v, &format!("cond.qrnn.{k}.bwd"), &rev, h);
        bwd.reverse();
        xs = fwd.iter().zip(&bwd).map(|(f, b)| f.iter().chain(b).copied().collect()).collect();
    }
    let (pw, pb) = (get(v, "cond.proj.weight"), get(v, "cond.proj.bias"));
    xs.iter()
        .map(|z| {
            let u: Vec<f32> = (0..2 * h).map(|i| if i % 2 == 0 { z[i / 2] } else { z[h + i / 2] }).collect();
            matvec(pw, &u).iter().zip(pb).map(|(a, b)| a + b).collect()
        })
        .collect()
}

#[test]
fn conditioning_network_matches_naive_implementation() {
    let voice = random_voice(WavenetConfig { layers: 3, residual_channels: 8, skip_channels: 8, dilation_cycle: 2 }, 2)
        .unwrap();
    let f = 9;
    let mut rng = Rng::new(4);
    // Frames shaped like dv_text's: voicing, log F0, one-hots.
    let features: Vec<Vec<f32>> = (0..f)
        .map(|_| {
            let mut x = vec![0.0f32; 227];
            x[0] = 1.0;
            x[1] = rng.uniform() * 2.0 - 1.0;
            for s in 0..5 {
                x[2 + 45 * s + (rng.next_u64() % 40) as usize] = 1.0;
                x[2 + 45 * s + 40 + (rng.next_u64() % 5) as usize] = 1.0;
            }
            x
        })
        .collect();
    let flat: Vec<f32> = features.concat();
    let net = ConditioningNetwork::new(&voice).unwrap();
    let got = net.forward(&flat).unwrap();
    let want = naive(&voice, &features);
    assert_eq!((got.frames(), got.width()), (f, 3 * 16));
    let mut max = 0.0f32;
    for (t, w) in want.iter().enumerate() {
        for (a, b) in got.frame(t).iter().zip(w) {
            max = max.max((a - b).abs());
        }
    }
    assert!(max < 1e-5, "max |Δ| = {max}");
    // The backward direction is real: the first frame depends on the last.
    let mut changed = flat.clone();
    let n = changed.len();
    changed[n - 226] = 1.0 - changed[n - 226];
    let other = net.forward(&changed).unwrap();
    assert_ne!(other.frame(0), got.frame(0));
    // A ragged input is an error, not a panic.
    assert!(net.forward(&flat[..300]).is_err());
}

/// Random frames shaped like `dv_text`'s (voicing, log F0, one-hots).
fn text_frames(f: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(f * 227);
    for _ in 0..f {
        let mut x = vec![0.0f32; 227];
        x[0] = f32::from(rng.uniform() < 0.7);
        x[1] = rng.uniform() * 2.0 - 1.0;
        for s in 0..5 {
            x[2 + 45 * s + (rng.next_u64() % 40) as usize] = 1.0;
            x[2 + 45 * s + 40 + (rng.next_u64() % 5) as usize] = 1.0;
        }
        out.extend(x);
    }
    out
}

/// Max |fast − reference| over max |reference|.
fn fast_vs_reference(net: &ConditioningNetwork, features: &[f32]) -> f32 {
    let fast = net.forward(features).unwrap();
    let slow = net.forward_reference(features).unwrap();
    assert_eq!((fast.frames(), fast.width()), (slow.frames(), slow.width()));
    let scale = slow.data().iter().fold(0.0f32, |m, v| m.max(v.abs()));
    assert!(scale > 0.0);
    crate::max_abs_diff(fast.data(), slow.data()) / scale
}

#[test]
fn fast_conditioning_matches_f64_reference_at_table_2_size() {
    // A trained voice's QRNN width (random voices have H = 32).
    let mut config = random_config(WavenetConfig::preset("40x64x256").unwrap());
    config.conditioning.hidden = 128;
    let weights = random_weights(&config, 5);
    let voice = Voice::new(config, weights).unwrap();
    let net = ConditioningNetwork::new(&voice).unwrap();
    let features = text_frames(301, 6);
    let rel = fast_vs_reference(&net, &features);
    assert!(rel < 1e-4, "max |Δ| / max |y| = {rel}");
    // Dense Gaussian inputs drive the gates harder than one-hots.
    let mut rng = Rng::new(8);
    let dense: Vec<f32> = (0..97 * 227).map(|_| rng.normal()).collect();
    let rel = fast_vs_reference(&net, &dense);
    assert!(rel < 1e-4, "dense inputs: max |Δ| / max |y| = {rel}");
}

#[test]
fn fast_conditioning_matches_f64_reference_small_and_edge_lengths() {
    let voice = random_voice(WavenetConfig { layers: 3, residual_channels: 8, skip_channels: 8, dilation_cycle: 2 }, 9)
        .unwrap();
    let net = ConditioningNetwork::new(&voice).unwrap();
    // One frame (no neighbours), a partial register tile, a partial block.
    for f in [1, 2, 7, 13, 97, 200] {
        let rel = fast_vs_reference(&net, &text_frames(f, f as u64));
        assert!(rel < 1e-5, "F = {f}: max |Δ| / max |y| = {rel}");
    }
    // No frames: an empty conditioning, from both paths.
    assert_eq!(net.forward(&[]).unwrap().frames(), 0);
    assert_eq!(net.forward_reference(&[]).unwrap().frames(), 0);
    // Bad input is an error from both paths.
    let mut bad = text_frames(3, 1);
    assert!(net.forward(&bad[..300]).is_err() && net.forward_reference(&bad[..300]).is_err());
    bad[5] = f32::NAN;
    assert!(net.forward(&bad).is_err() && net.forward_reference(&bad).is_err());
}

#[test]
fn all_frames_product_avx2_matches_scalar() {
    if crate::avx2_or_note("all-frames product").is_none() {
        return;
    }
    let mut rng = Rng::new(11);
    // Full and partial panels (16 outputs), tiles (6 frames) and blocks (96 frames).
    for (rows, cols, m) in [(1536, 227, 300), (5120, 256, 13), (48, 8, 1), (40, 5, 7), (3, 17, 200), (16, 1, 96)] {
        let w: Vec<f32> = (0..rows * cols).map(|_| rng.normal()).collect();
        let a: Vec<f32> = (0..m * cols).map(|_| rng.normal()).collect();
        let c0: Vec<f32> = (0..m * rows).map(|_| rng.normal()).collect();
        let (mut got, mut want) = (c0.clone(), c0.clone());
        dv_synth::kernels::matmul_acc(true, &w, rows, cols, &a, &mut got).unwrap();
        dv_synth::kernels::matmul_acc(false, &w, rows, cols, &a, &mut want).unwrap();
        // Naive f64 for the scalar loop itself.
        let exact: Vec<f32> = (0..m * rows)
            .map(|i| {
                let (t, o) = (i / rows, i % rows);
                let s: f64 = (0..cols).map(|j| w[o * cols + j] as f64 * a[t * cols + j] as f64).sum();
                (c0[i] as f64 + s) as f32
            })
            .collect();
        let tol = 1e-5 * (cols as f32).sqrt() * 4.0;
        assert!(crate::max_abs_diff(&want, &exact) < tol, "{rows}x{cols}, M = {m}: scalar vs f64");
        assert!(crate::max_abs_diff(&got, &want) < tol, "{rows}x{cols}, M = {m}: avx2 vs scalar");
    }
}
