//! The duration and F0 model against a naive implementation written here
//! from PyTorch's `nn.GRU` documentation (one gate at a time, f32), and the
//! units and checks of `predict`.

use dv_synth::random::{random_voice, random_voice_with_duration};
use dv_synth::{DurationModel, Rng, SynthError};
use dv_voice::{DurationConfig, DurationGolden, Golden, Tensor, Voice, WavenetConfig};

const WAVENET: WavenetConfig = WavenetConfig { layers: 2, residual_channels: 8, skip_channels: 8, dilation_cycle: 2 };

fn small() -> DurationConfig {
    DurationConfig {
        input_dim: 45,
        fc: 16,
        gru: 8,
        gru_layers: 2,
        f0_points: 5,
        duration_unit_s: 0.0125,
        f0_unit_hz: 80.0,
        stress: true,
        bidirectional: false,
    }
}

fn get<'a>(v: &'a Voice, name: &str) -> &'a [f32] {
    v.tensor(name).unwrap().data()
}

/// `W x + b` for `W` `[rows, x.len()]`.
fn linear(w: &[f32], b: &[f32], x: &[f32]) -> Vec<f32> {
    w.chunks(x.len()).zip(b).map(|(row, bb)| row.iter().zip(x).map(|(a, c)| a * c).sum::<f32>() + bb).collect()
}

fn sig(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// `torch.nn.GRU` (one layer), as its documentation states it:
/// r = σ(W_ir x + b_ir + W_hr h + b_hr), z = σ(W_iz x + b_iz + W_hz h + b_hz),
/// n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)), h' = (1 − z) ⊙ n + z ⊙ h.
fn gru_layer(v: &Voice, dir: &str, k: usize, xs: &[Vec<f32>], h: usize) -> Vec<Vec<f32>> {
    let t = |n: &str| get(v, &format!("duration.{dir}.{k}.{n}_l0"));
    let (w_ih, w_hh, b_ih, b_hh) = (t("weight_ih"), t("weight_hh"), t("bias_ih"), t("bias_hh"));
    let d = xs.first().map_or(0, Vec::len);
    let gate = |g: usize, x: &[f32], hv: &[f32]| -> (Vec<f32>, Vec<f32>) {
        let i = linear(&w_ih[g * h * d..(g + 1) * h * d], &b_ih[g * h..(g + 1) * h], x);
        let hh = linear(&w_hh[g * h * h..(g + 1) * h * h], &b_hh[g * h..(g + 1) * h], hv);
        (i, hh)
    };
    let mut hv = vec![0.0f32; h];
    let mut out = Vec::new();
    for x in xs {
        let (ri, rh) = gate(0, x, &hv);
        let (zi, zh) = gate(1, x, &hv);
        let (ni, nh) = gate(2, x, &hv);
        let r: Vec<f32> = ri.iter().zip(&rh).map(|(a, b)| sig(a + b)).collect();
        let z: Vec<f32> = zi.iter().zip(&zh).map(|(a, b)| sig(a + b)).collect();
        let n: Vec<f32> = (0..h).map(|j| (ni[j] + r[j] * nh[j]).tanh()).collect();
        hv = (0..h).map(|j| (1.0 - z[j]) * n[j] + z[j] * hv[j]).collect();
        out.push(hv.clone());
    }
    out
}

fn naive(v: &Voice, inputs: &[(usize, usize)]) -> Vec<Vec<f32>> {
    let d = v.config().duration.unwrap();
    let relu = |x: Vec<f32>| -> Vec<f32> { x.into_iter().map(|v| v.max(0.0)).collect() };
    let mut xs: Vec<Vec<f32>> = inputs
        .iter()
        .map(|&(p, s)| {
            let mut x = vec![0.0f32; 45];
            x[p] = 1.0;
            x[40 + s] = 1.0;
            let a1 = relu(linear(get(v, "duration.fc1.weight"), get(v, "duration.fc1.bias"), &x));
            relu(linear(get(v, "duration.fc2.weight"), get(v, "duration.fc2.bias"), &a1))
        })
        .collect();
    for k in 0..d.gru_layers {
        let forward = gru_layer(v, "gru", k, &xs, d.gru);
        xs = if d.bidirectional {
            // The reverse direction: the sequence last to first, its states put back in order.
            let reversed: Vec<Vec<f32>> = xs.iter().rev().cloned().collect();
            let mut back = gru_layer(v, "gru_rev", k, &reversed, d.gru);
            back.reverse();
            forward.into_iter().zip(back).map(|(f, b)| [f, b].concat()).collect()
        } else {
            forward
        };
    }
    xs.iter().map(|h| linear(get(v, "duration.out.weight"), get(v, "duration.out.bias"), h)).collect()
}

fn random_inputs(n: usize, seed: u64) -> Vec<(usize, usize)> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| ((rng.next_u64() % 40) as usize, (rng.next_u64() % 5) as usize)).collect()
}

#[test]
fn forward_matches_naive_pytorch_gru() {
    let both = DurationConfig { bidirectional: true, ..small() };
    let paper_both = DurationConfig { bidirectional: true, ..DurationConfig::paper(true) };
    for (d, seed) in [
        (small(), 1),
        (DurationConfig { gru_layers: 3, ..small() }, 2),
        (DurationConfig::paper(true), 3),
        (both, 4),
        (DurationConfig { gru_layers: 1, ..both }, 5),
        (paper_both, 6),
    ] {
        let voice = random_voice_with_duration(WAVENET, d, seed).unwrap();
        let model = DurationModel::new(&voice).unwrap();
        let inputs = random_inputs(17, seed + 10);
        let got = model.forward(&inputs).unwrap();
        let want = naive(&voice, &inputs);
        assert_eq!(got.len(), inputs.len() * (2 + d.f0_points));
        let mut max = 0.0f32;
        let mut spread = 0.0f32;
        for (row, w) in got.chunks_exact(2 + d.f0_points).zip(&want) {
            for (a, b) in row.iter().zip(w) {
                max = max.max((a - b).abs());
                spread = spread.max(b.abs());
            }
        }
        assert!(max < 2e-5, "{d:?}: max |Δ| = {max}");
        assert!(spread > 0.1, "{d:?}: outputs too small to test anything ({spread})");
    }
}

#[test]
fn forward_is_recurrent_and_causal() {
    let voice = random_voice_with_duration(WAVENET, small(), 4).unwrap();
    let model = DurationModel::new(&voice).unwrap();
    let od = model.output_dim();
    let inputs = random_inputs(8, 5);
    let base = model.forward(&inputs).unwrap();
    let mut changed = inputs.clone();
    changed[3] = ((changed[3].0 + 7) % 40, (changed[3].1 + 1) % 5);
    let other = model.forward(&changed).unwrap();
    // Rows before the change are untouched; rows after it see it.
    assert_eq!(base[..3 * od], other[..3 * od]);
    for t in 3..8 {
        assert_ne!(base[t * od..(t + 1) * od], other[t * od..(t + 1) * od], "row {t}");
    }
    // The same phoneme gives different outputs in different contexts.
    let a = model.forward(&[(5, 0), (9, 0)]).unwrap();
    let b = model.forward(&[(6, 0), (9, 0)]).unwrap();
    assert_ne!(a[od..], b[od..]);
    // A prefix's outputs are the outputs' prefix.
    assert_eq!(model.forward(&inputs[..5]).unwrap(), base[..5 * od]);
    assert!(model.forward(&[]).unwrap().is_empty());
}

#[test]
fn a_bidirectional_model_sees_the_phonemes_after_each_one() {
    let voice = random_voice_with_duration(WAVENET, DurationConfig { bidirectional: true, ..small() }, 7).unwrap();
    let model = DurationModel::new(&voice).unwrap();
    let od = model.output_dim();
    let inputs = random_inputs(8, 8);
    let base = model.forward(&inputs).unwrap();
    let mut changed = inputs.clone();
    changed[5] = ((changed[5].0 + 7) % 40, (changed[5].1 + 1) % 5);
    let other = model.forward(&changed).unwrap();
    // Every row sees the change, those before it too.
    for t in 0..8 {
        assert_ne!(base[t * od..(t + 1) * od], other[t * od..(t + 1) * od], "row {t}");
    }
}

/// A voice whose duration outputs are exactly `bias` for every phoneme.
fn constant_output_voice(d: DurationConfig, bias: &[f32]) -> Voice {
    let v = random_voice_with_duration(WAVENET, d, 6).unwrap();
    let mut w = v.weights().clone();
    let od = d.output_dim();
    w.insert("duration.out.weight".into(), Tensor::zeros(vec![od, d.gru]));
    w.insert("duration.out.bias".into(), Tensor::new("b", vec![od], bias.to_vec()).unwrap());
    Voice::new(v.config().clone(), w).unwrap()
}

#[test]
fn predict_clamps_durations_and_applies_units() {
    let d = DurationConfig { f0_points: 3, ..small() };
    let model = DurationModel::new(&constant_output_voice(d, &[-3.0, 0.0, 1.5, 2.0, -0.5])).unwrap();
    let p = model.predict(&[(0, 0), (39, 4)]).unwrap();
    assert_eq!(p.len(), 2);
    for q in &p {
        assert_eq!(q.duration_s, 0.0, "a negative duration clamps to 0");
        assert_eq!(q.voiced_p, 0.5);
        assert!(!q.voiced(), "p = 0.5 is not > 0.5");
        assert_eq!(q.f0_hz, vec![120.0, 160.0, -40.0]);
    }
    let model = DurationModel::new(&constant_output_voice(d, &[8.0, 2.0, 1.0, 1.0, 1.0])).unwrap();
    let q = &model.predict(&[(3, 1)]).unwrap()[0];
    assert!((q.duration_s - 0.1).abs() < 1e-12, "8 × 12.5 ms, got {}", q.duration_s);
    assert!((q.voiced_p - 1.0 / (1.0 + (-2.0f32).exp())).abs() < 1e-6);
    assert!(q.voiced());

    // On random weights predict is forward in units.
    let voice = random_voice_with_duration(WAVENET, small(), 7).unwrap();
    let model = DurationModel::new(&voice).unwrap();
    let inputs = random_inputs(10, 8);
    let raw = model.forward(&inputs).unwrap();
    let p = model.predict(&inputs).unwrap();
    for (o, q) in raw.chunks_exact(model.output_dim()).zip(&p) {
        assert_eq!(q.duration_s, (o[0] as f64).max(0.0) * 0.0125);
        assert_eq!(q.f0_hz.len(), 5);
        for (hz, v) in q.f0_hz.iter().zip(&o[2..]) {
            assert!((hz - v * 80.0).abs() <= 1e-4 * hz.abs().max(1.0));
        }
    }
}

#[test]
fn bad_inputs_and_missing_model_are_errors() {
    let voice = random_voice_with_duration(WAVENET, small(), 9).unwrap();
    let model = DurationModel::new(&voice).unwrap();
    assert!(model.uses_stress());
    match model.forward(&[(1, 0), (40, 0)]) {
        Err(SynthError::OutOfRange { what: "phoneme", position: 1, value: 40, limit: 40 }) => {}
        other => panic!("expected a phoneme out of range, got {other:?}"),
    }
    match model.predict(&[(1, 5)]) {
        Err(SynthError::OutOfRange { what: "stress", position: 0, value: 5, limit: 5 }) => {}
        other => panic!("expected a stress out of range, got {other:?}"),
    }
    let plain = random_voice(WAVENET, 1).unwrap();
    assert!(matches!(DurationModel::new(&plain), Err(SynthError::NoModel { what: "duration" })));
}

#[test]
fn golden_parity_through_a_package_on_disk() {
    let voice = random_voice_with_duration(WAVENET, small(), 11).unwrap();
    let model = DurationModel::new(&voice).unwrap();
    assert_eq!(model.golden_parity(&voice).unwrap(), None);
    let inputs = random_inputs(6, 12);
    let mut out = model.forward(&inputs).unwrap();
    out[7] += 0.01; // the trainer's float32 differs a little
    let config = voice.config().clone();
    let dg = DurationGolden::new(&config, &inputs, Tensor::new("o", vec![6, 7], out).unwrap()).unwrap();
    let golden = Golden {
        features: Tensor::zeros(vec![1, 227]),
        conditioning: Tensor::zeros(vec![1, config.conditioning_width()]),
        samples: vec![128; 4],
        logits: Tensor::zeros(vec![4, 256]),
        duration: Some(dg),
        g2p: None,
    };
    let dir = tempfile_dir();
    voice.with_golden(golden).unwrap().save(&dir).unwrap();
    let back = Voice::read(&dir).unwrap();
    let model = DurationModel::new(&back).unwrap();
    let d = model.golden_parity(&back).unwrap().unwrap();
    assert!((d - 0.01).abs() < 1e-6, "{d}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fresh directory under the target's temp dir (dv-synth has no tempfile).
fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dv-synth-duration-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
