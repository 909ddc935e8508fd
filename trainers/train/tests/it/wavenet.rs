//! The WaveNet and its QRNN conditioning (App. A): the blocked fo-pooling
//! scan against the step-by-step recurrence and a hand computation,
//! causality, the receptive field, overfitting a tiny batch.

use dv_torch::tch;
use dv_torch::tch::{nn, nn::OptimizerConfig, Device, Kind, Tensor};
use dv_train::qrnn::{fo_pool, fo_pool_loop, interleave, QrnnDirection};
use dv_train::{Batch, Model, Wavenet, WavenetConfig};

fn max_abs_diff(a: &Tensor, b: &Tensor) -> f64 {
    a.f_sub(b).unwrap().abs().max().double_value(&[])
}

#[test]
fn blocked_fo_pooling_equals_the_recurrence() {
    tch::manual_seed(7);
    for &(b, t, h) in &[(1, 1, 1), (2, 5, 3), (3, 32, 4), (2, 33, 2), (1, 100, 5), (2, 320, 8)] {
        let cand = Tensor::randn([b, t, h], (Kind::Float, Device::Cpu)).tanh();
        // Forget gates from nearly 0 to nearly 1, as sigmoids produce.
        let log_f = Tensor::randn([b, t, h], (Kind::Float, Device::Cpu)).f_mul_scalar(4.0).unwrap().log_sigmoid();
        let fast = fo_pool(&cand, &log_f).unwrap();
        let slow = fo_pool_loop(&cand, &log_f).unwrap();
        assert_eq!(fast.size(), vec![b, t, h]);
        let d = max_abs_diff(&fast, &slow);
        assert!(d < 1e-5, "b={b} t={t} h={h}: blocked scan differs from the loop by {d}");
        // And so do the gradients (the scan's backward is autograd's, through masked exponentials).
        let w = Tensor::randn([b, t, h], (Kind::Float, Device::Cpu));
        let grads = |pool: fn(&Tensor, &Tensor) -> Result<Tensor, dv_train::TrainError>| {
            let (c, f) = (cand.detach().set_requires_grad(true), log_f.detach().set_requires_grad(true));
            let y = pool(&c, &f).unwrap().f_mul(&w).unwrap().sum(Kind::Float);
            let g = Tensor::run_backward(&[y], &[&c, &f], false, false);
            (g[0].shallow_clone(), g[1].shallow_clone())
        };
        let ((fc, ff), (sc, sf)) = (grads(fo_pool), grads(fo_pool_loop));
        let (dc, df) = (max_abs_diff(&fc, &sc), max_abs_diff(&ff, &sf));
        assert!(dc < 1e-4 && df < 1e-4, "b={b} t={t} h={h}: gradients differ by {dc} (h̃), {df} (log f)");
    }
}

#[test]
fn fo_pooling_matches_eq_23_by_hand() {
    // One channel, three frames: c(t) = f c(t−1) + (1 − f) h̃, c(−1) = 0.
    let cand = Tensor::from_slice(&[0.5f32, -1.0, 2.0]).view([1, 3, 1]);
    let f = [0.25f32, 0.5, 0.9];
    let log_f = Tensor::from_slice(&f.map(|v| v.ln())).view([1, 3, 1]);
    let c0 = 0.75 * 0.5; // 0.375
    let c1 = 0.5 * c0 + -0.5; // −0.3125
    let c2 = 0.9 * c1 + 0.1 * 2.0; // −0.08125
    let got =
        Vec::<f32>::try_from(fo_pool(&log_f.ones_like().f_mul(&cand).unwrap(), &log_f).unwrap().view([-1])).unwrap();
    for (g, want) in got.iter().zip([c0, c1, c2]) {
        assert!((*g as f64 - want).abs() < 1e-6, "got {got:?}, want {:?}", [c0, c1, c2]);
    }
}

#[test]
fn qrnn_direction_matches_a_naive_loop() {
    tch::manual_seed(3);
    let vs = nn::VarStore::new(Device::Cpu);
    let q = QrnnDirection::new(vs.root(), 5, 4);
    let x = Tensor::randn([2, 9, 5], (Kind::Float, Device::Cpu));
    let z = q.forward(&x).unwrap();
    let to = |t: &Tensor| Vec::<f32>::try_from(t.contiguous().view([-1])).unwrap();
    let (wp, wc, bias, xs, zs) = (to(&q.w_prev), to(&q.w_cur), to(&q.bias), to(&x), to(&z));
    let (d, h) = (5usize, 4usize);
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    for b in 0..2 {
        let mut c = vec![0.0f64; h];
        for t in 0..9 {
            for j in 0..h {
                let gate = |row: usize| {
                    let mut a = bias[row] as f64;
                    for k in 0..d {
                        let cur = xs[(b * 9 + t) * d + k] as f64;
                        let prev = if t > 0 { xs[(b * 9 + t - 1) * d + k] as f64 } else { 0.0 };
                        a += wp[row * d + k] as f64 * prev + wc[row * d + k] as f64 * cur;
                    }
                    a
                };
                let (cand, o, f) = (gate(j).tanh(), sig(gate(h + j)), sig(gate(2 * h + j)));
                c[j] = f * c[j] + (1.0 - f) * cand;
                let want = o * c[j];
                let got = zs[(b * 9 + t) * h + j] as f64;
                assert!((got - want).abs() < 1e-5, "b={b} t={t} j={j}: {got} vs {want}");
            }
        }
    }
}

#[test]
fn interleave_alternates_directions() {
    let f = Tensor::from_slice(&[1.0f32, 2.0, 3.0]).view([1, 1, 3]);
    let b = Tensor::from_slice(&[-1.0f32, -2.0, -3.0]).view([1, 1, 3]);
    let u = Vec::<f32>::try_from(interleave(&f, &b).unwrap().view([-1])).unwrap();
    assert_eq!(u, vec![1.0, -1.0, 2.0, -2.0, 3.0, -3.0]);
}

fn tiny() -> (Wavenet, WavenetConfig) {
    // Under dv-train's RNG lock: tests run in parallel threads and libtorch has one generator.
    let c = WavenetConfig::preset("tiny").unwrap();
    (dv_train::with_rng(11, || Wavenet::new(&c, Device::Cpu)).unwrap(), c)
}

fn inputs(c: &WavenetConfig, frames: i64, seed: u64) -> (Tensor, Tensor) {
    dv_train::with_rng(seed, || {
        let x = Tensor::randn([1, frames, c.conditioning.input_dim as i64], (Kind::Float, Device::Cpu));
        let y = Tensor::randint(256, [1, frames * c.hop as i64], (Kind::Int64, Device::Cpu));
        (x, y)
    })
}

#[test]
fn presets_have_the_table_2_sizes_and_receptive_fields() {
    for (name, l, r, s) in [
        ("20x32x128", 20, 32, 128),
        ("20x64x128", 20, 64, 128),
        ("40x64x256", 40, 64, 256),
        ("40x64x128", 40, 64, 128),
        ("40x32x128", 40, 32, 128),
    ] {
        let c = WavenetConfig::preset(name).unwrap();
        let w = c.wavenet;
        assert_eq!((w.layers, w.residual_channels, w.skip_channels), (l, r, s));
        // Cycles of 10: 1 + 2 + … + 512 = 1023 per cycle.
        assert_eq!(w.receptive_field(), 2 + 1023 * l / 10, "{name}");
    }
    let c = WavenetConfig::preset("tiny").unwrap();
    assert_eq!(c.wavenet.receptive_field(), 2 + 1 + 2 + 4 + 1);
}

#[test]
fn output_before_t_ignores_samples_at_and_after_t() {
    let (m, c) = tiny();
    let (x, y) = inputs(&c, 3, 1);
    let base = m.logits(&x, &y).unwrap();
    let hop = c.hop as i64;
    assert_eq!(base.size(), vec![1, 3 * hop, 256]);
    for t in [0i64, 1, 17, 100, 190] {
        let changed = y.copy();
        let _ = changed.narrow(1, t, 3 * hop - t).fill_(255 - 7);
        let out = m.logits(&x, &changed).unwrap();
        // Positions ≤ t see only samples < t.
        let d = max_abs_diff(&base.narrow(1, 0, t + 1), &out.narrow(1, 0, t + 1));
        assert_eq!(d, 0.0, "changing samples from {t} on changed outputs at or before {t}");
        // Position t + 1 reads y(t): it must change (else the test is vacuous).
        let d = max_abs_diff(&base.narrow(1, t + 1, 1), &out.narrow(1, t + 1, 1));
        assert!(d > 0.0, "output {} did not depend on sample {t}", t + 1);
    }
}

#[test]
fn the_receptive_field_equals_the_formula() {
    let (m, c) = tiny();
    let rf = c.wavenet.receptive_field() as i64;
    let (x, y) = inputs(&c, 2, 2);
    let t = 100i64;
    let base = m.logits(&x, &y).unwrap().narrow(1, t, 1);
    let flip = |pos: i64| {
        let z = y.copy();
        let v = z.int64_value(&[0, pos]);
        let _ = z.narrow(1, pos, 1).fill_((v + 128) % 256);
        m.logits(&x, &z).unwrap().narrow(1, t, 1)
    };
    // y(t − rf) is the oldest sample output t sees; one further back is outside.
    assert!(max_abs_diff(&base, &flip(t - rf)) > 0.0, "output {t} ignores y(t − {rf})");
    assert_eq!(max_abs_diff(&base, &flip(t - rf - 1)), 0.0, "output {t} sees y(t − {})", rf + 1);
}

#[test]
fn conditioning_reaches_the_output_and_the_shape_contract_holds() {
    // The backward QRNN lets frame k influence earlier frames, so only check
    // that the conditioning reaches the samples at all and that the shape
    // contract (N = F · hop) is enforced.
    let (m, c) = tiny();
    let (x, y) = inputs(&c, 2, 3);
    let other = x.f_add_scalar(1.0).unwrap();
    assert!(max_abs_diff(&m.logits(&x, &y).unwrap(), &m.logits(&other, &y).unwrap()) > 0.0);
    let short = y.narrow(1, 0, c.hop as i64 * 2 - 1);
    let err = m.logits(&x, &short).expect_err("N != F·hop must be an error").to_string();
    assert!(err.contains("wavenet input"), "{err}");
}

#[test]
fn a_tiny_batch_overfits() {
    let (m, c) = tiny();
    let (frames, hop) = (3, c.hop as i64);
    let (x, _) = inputs(&c, frames, 4);
    // A learnable signal: a slow sawtooth in mu-law codes.
    let codes: Vec<i64> = (0..2 * frames * hop).map(|i| 100 + (i % 32) * 2).collect();
    let y = Tensor::from_slice(&codes).view([2, frames * hop]);
    let x = Tensor::cat(&[&x, &x.flip([1])], 0);
    let batch = Batch {
        inputs: x,
        input_lengths: vec![frames * hop; 2],
        targets: y,
        target_lengths: vec![16, 16],
        example_ids: vec![0, 1],
        audio_seconds: None,
    };
    let mut opt = nn::Adam::default().build(m.var_store(), 1e-2).unwrap();
    let first = m.loss_sum(&batch, true, 0).unwrap().double_value(&[]) / 2.0;
    let mut last = first;
    for _ in 0..150 {
        let loss = m.loss_sum(&batch, true, 0).unwrap();
        opt.backward_step(&loss);
        last = loss.double_value(&[]) / 2.0;
    }
    assert!(first > 5.0, "initial loss {first} should be near ln 256 = 5.55");
    assert!(last < 0.5, "loss went from {first} to {last}: the tiny batch did not overfit");
}

#[test]
fn the_fused_step_equals_autograd_in_loss_and_every_gradient() {
    // The hand-written stack (libtorch reference gate on CPU) against autograd over `logits`,
    // with hop 4 and one frame in the second case so that a dilation reaches the window (d = N).
    for (hop, frames) in [(64, 3), (4, 1)] {
        let base = WavenetConfig { hop, ..WavenetConfig::preset("tiny").unwrap() };
        let build = |fused| {
            let c = WavenetConfig { fused, ..base.clone() };
            dv_train::with_rng(5, || Wavenet::new(&c, Device::Cpu)).unwrap()
        };
        let (fused, plain) = (build(true), build(false));
        let (x, _) = inputs(&base, frames, 6);
        let (_, y) = inputs(&base, 2 * frames, 7);
        let n = frames * hop as i64;
        let batch = Batch {
            inputs: Tensor::cat(&[&x, &x.flip([1])], 0),
            input_lengths: vec![n, n - 1],
            targets: y.view([2, n]),
            target_lengths: vec![1, 0],
            example_ids: vec![0, 1],
            audio_seconds: None,
        };
        for train in [false, true] {
            let (a, b) = (fused.loss_sum(&batch, train, 0).unwrap(), plain.loss_sum(&batch, train, 0).unwrap());
            let (la, lb) = (a.double_value(&[]), b.double_value(&[]));
            assert!((la - lb).abs() < 1e-5 * lb.abs(), "hop {hop} train {train}: loss {la} vs {lb}");
            if train {
                a.backward();
                b.backward();
            }
        }
        let (pa, pb) = (fused.named_parameters(), plain.named_parameters());
        assert_eq!(pa.len(), pb.len());
        for ((name, ta), (_, tb)) in pa.iter().zip(&pb) {
            let (ga, gb) = (ta.grad(), tb.grad());
            assert!(ga.defined() && gb.defined(), "hop {hop}: {name} has no gradient");
            let scale = gb.abs().max().double_value(&[]).max(1e-3);
            let d = max_abs_diff(&ga, &gb);
            assert!(d <= 1e-5 * scale, "hop {hop}: {name} gradient differs by {d:.3e} (scale {scale:.3e})");
        }
    }
}

#[test]
fn f0_jitter_moves_only_voiced_log_f0_by_a_seeded_offset_and_slope() {
    use dv_text::CONDITIONING_DIM;
    use dv_train::jitter_f0;
    // 64 frames: voiced (flag 1, log F0 0.25) but for frames 10..20; feature 2 a phone slot.
    let frame = |f: usize| {
        let mut v = vec![0f32; CONDITIONING_DIM];
        if !(10..20).contains(&f) {
            v[0] = 1.0;
            v[1] = 0.25;
        }
        v[2] = 1.0;
        v
    };
    let clean: Vec<f32> = (0..64).flat_map(frame).collect();
    let (mut offsets, mut moved) = (Vec::new(), 0);
    for seed in 0..2000u64 {
        let mut c = clean.clone();
        jitter_f0(&mut c, 0.2, seed);
        let mut again = clean.clone();
        jitter_f0(&mut again, 0.2, seed);
        assert_eq!(c, again, "the same seed draws the same noise");
        for (f, (a, b)) in c.chunks(CONDITIONING_DIM).zip(clean.chunks(CONDITIONING_DIM)).enumerate() {
            assert_eq!(a[0], b[0]);
            assert_eq!(&a[2..], &b[2..], "frame {f}: only log F0 moves");
            if (10..20).contains(&f) {
                assert_eq!(a[1], 0.0, "frame {f} is unvoiced");
            }
        }
        // offset and slope from the first and last voiced frames (the slope runs -1..+1)
        let (first, last) = (c[1] - 0.25, c[63 * CONDITIONING_DIM + 1] - 0.25);
        offsets.push(0.5 * (first + last));
        moved += (first != 0.0) as usize;
        // frames in between lie on the line
        let mid = c[40 * CONDITIONING_DIM + 1] - 0.25;
        let x = 2.0 * 40.0 / 63.0 - 1.0;
        let want = 0.5 * (first + last) + 0.5 * (last - first) * x;
        assert!((mid - want).abs() < 1e-5, "seed {seed}: {mid} against {want}");
    }
    assert_eq!(moved, 2000);
    let mean = offsets.iter().sum::<f32>() / offsets.len() as f32;
    let sd = (offsets.iter().map(|o| (o - mean).powi(2)).sum::<f32>() / offsets.len() as f32).sqrt();
    assert!(mean.abs() < 0.02, "mean offset {mean}");
    assert!((sd - 0.2).abs() < 0.02, "offset standard deviation {sd}, want 0.2");
    let mut none = clean.clone();
    jitter_f0(&mut none, 0.0, 7);
    assert_eq!(none, clean, "no jitter, no change");
}
