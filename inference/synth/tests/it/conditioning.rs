//! The conditioning network against a naive implementation written here
//! from FORMAT.md: each direction a plain loop, the backward direction by
//! reversing the sequence, running forward and reversing back.

use dv_synth::random::random_voice;
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
