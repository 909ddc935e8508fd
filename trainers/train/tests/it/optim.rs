use dv_torch::tch;
use dv_torch::tch::{Kind, Tensor};
use dv_train::{clip_grad_norm, Adam, AdamConfig, FlatParams, StepAnnealing};

fn config(lr: f64) -> AdamConfig {
    AdamConfig { lr, beta1: 0.9, beta2: 0.999, eps: 1e-8, clip_norm: None }
}

/// Adam by hand in f64 for one scalar parameter.
fn adam_reference(grads: &[f64], lr: f64, p0: f64) -> f64 {
    let (mut m, mut v, mut p) = (0.0, 0.0, p0);
    for (k, g) in grads.iter().enumerate() {
        let t = (k + 1) as i32;
        m = 0.9 * m + 0.1 * g;
        v = 0.999 * v + 0.001 * g * g;
        let denom = v.sqrt() / (1.0 - 0.999f64.powi(t)).sqrt() + 1e-8;
        p -= lr / (1.0 - 0.9f64.powi(t)) * m / denom;
    }
    p
}

#[test]
fn adam_matches_the_update_rule_and_uses_the_papers_defaults() {
    let c: AdamConfig = toml::from_str("lr = 0.001").unwrap();
    assert_eq!((c.beta1, c.beta2, c.eps, c.clip_norm), (0.9, 0.999, 1e-8, None));
    // Loss sum(w_i * x_i): the gradient of w is x, different every step.
    let w = Tensor::from_slice(&[0.5f64, -1.0, 2.0]).set_requires_grad(true);
    let params = vec![w.shallow_clone()];
    let mut adam = Adam::new(config(0.01), &params).unwrap();
    let xs = [[1.0, -2.0, 0.5], [0.3, 0.1, -4.0], [-1.0, 1.0, 1.0], [2.0, 0.0, 0.2]];
    for x in &xs {
        let mut g = w.grad();
        if g.defined() {
            let _ = g.zero_();
        }
        (&w * Tensor::from_slice(x)).sum(Kind::Double).backward();
        adam.step(&params, 0.01).unwrap();
    }
    assert_eq!(adam.step, 4);
    for i in 0..3 {
        let grads: Vec<f64> = xs.iter().map(|x| x[i]).collect();
        let want = adam_reference(&grads, 0.01, [0.5, -1.0, 2.0][i]);
        let got = w.double_value(&[i as i64]);
        assert!((got - want).abs() < 1e-12, "param {i}: {got} vs {want}");
    }
}

#[test]
fn step_annealing_multiplies_every_n_iterations() {
    let s = StepAnnealing { rate: 0.95, every: 500, warmup: 0 };
    assert_eq!(s.lr(1e-4, 0), 1e-4);
    assert_eq!(s.lr(1e-4, 499), 1e-4);
    assert!((s.lr(1e-4, 500) - 0.95e-4).abs() < 1e-18);
    assert!((s.lr(1e-4, 1999) - 1e-4 * 0.95f64.powi(3)).abs() < 1e-18);
}

#[test]
fn warm_up_ramps_linearly_then_anneals_as_before() {
    let s = StepAnnealing { rate: 0.5, every: 10, warmup: 4 };
    let lrs: Vec<f64> = (0..6).map(|i| s.lr(1.0, i)).collect();
    assert_eq!(lrs, [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]);
    assert_eq!(s.lr(1.0, 10), 0.5);
    // Absent from a config, it is off (and old configs read unchanged).
    let t: StepAnnealing = toml::from_str("rate = 0.5\nevery = 10").unwrap();
    assert_eq!(t, StepAnnealing { warmup: 0, ..s });
    assert!(!toml::to_string(&t).unwrap().contains("warmup"));
}

#[test]
fn clipping_scales_the_global_norm() {
    let a = Tensor::from_slice(&[0.0f32, 0.0]).set_requires_grad(true);
    let b = Tensor::from_slice(&[0.0f32]).set_requires_grad(true);
    (&a * Tensor::from_slice(&[3.0f32, 0.0])).sum(Kind::Float).backward();
    (&b * Tensor::from_slice(&[4.0f32])).sum(Kind::Float).backward();
    let params = vec![a.shallow_clone(), b.shallow_clone()];
    let norm = clip_grad_norm(&params, 1.0).unwrap();
    assert!((norm - 5.0).abs() < 1e-6);
    assert!((a.grad().double_value(&[0]) - 0.6).abs() < 1e-5);
    assert!((b.grad().double_value(&[0]) - 0.8).abs() < 1e-5);
    // Under the limit: untouched.
    let norm = clip_grad_norm(&params, 10.0).unwrap();
    assert!((norm - 1.0).abs() < 1e-5);
    assert!((b.grad().double_value(&[0]) - 0.8).abs() < 1e-5);
}

#[test]
fn flat_adam_over_float32_tensors_gives_the_same_bits_as_per_tensor_adam() {
    // Three float32 parameters of different shapes take the flat path; the
    // same ops applied tensor by tensor here are the reference. Moments are
    // seeded through `adam.m` / `adam.v` (as a checkpoint restore does) to
    // check that they are the state the step uses.
    tch::manual_seed(5);
    let shapes: [&[i64]; 3] = [&[3, 4], &[5], &[2, 3, 2]];
    let params: Vec<Tensor> =
        shapes.iter().map(|s| Tensor::randn(*s, (Kind::Float, tch::Device::Cpu)).set_requires_grad(true)).collect();
    let mut adam = Adam::new(config(0.01), &params).unwrap();
    let reference: Vec<Tensor> = params.iter().map(|p| p.detach().copy()).collect();
    let mut m_ref: Vec<Tensor> = Vec::new();
    let mut v_ref: Vec<Tensor> = Vec::new();
    for (k, p) in params.iter().enumerate() {
        let m0 = p.randn_like().f_mul_scalar(0.1).unwrap();
        let v0 = p.randn_like().square().f_mul_scalar(0.01).unwrap();
        adam.m[k].copy_(&m0);
        adam.v[k].copy_(&v0);
        m_ref.push(m0);
        v_ref.push(v0);
    }
    for step in 1..=3 {
        let grads: Vec<Tensor> = params.iter().map(|p| p.randn_like()).collect();
        for (p, g) in params.iter().zip(&grads) {
            let mut pg = p.grad();
            if pg.defined() {
                let _ = pg.zero_();
            }
            (p * g).sum(Kind::Float).backward();
        }
        adam.step(&params, 0.01).unwrap();
        let (bc1, bc2) = (1.0 - 0.9f64.powi(step), 1.0 - 0.999f64.powi(step));
        for k in 0..3 {
            let g = &grads[k];
            let _ = m_ref[k].f_mul_scalar_(0.9).unwrap();
            let _ = m_ref[k].f_add_(&g.f_mul_scalar(1.0 - 0.9).unwrap()).unwrap();
            let _ = v_ref[k].f_mul_scalar_(0.999).unwrap();
            let _ = v_ref[k].f_addcmul_(g, &g.f_mul_scalar(1.0 - 0.999).unwrap()).unwrap();
            let denom = v_ref[k].sqrt().f_div_scalar(bc2.sqrt()).unwrap().f_add_scalar(1e-8).unwrap();
            let mut r = reference[k].shallow_clone();
            let _ = r.f_sub_(&m_ref[k].f_div(&denom).unwrap().f_mul_scalar(0.01 / bc1).unwrap()).unwrap();
        }
    }
    for k in 0..3 {
        assert!(params[k].detach().equal(&reference[k]), "parameter {k} differs from the per-tensor update");
        assert!(adam.m[k].equal(&m_ref[k]) && adam.v[k].equal(&v_ref[k]), "moments of {k} differ");
    }
}

#[test]
fn flat_parameters_hold_values_and_accumulated_gradients_and_step_like_per_tensor_adam() {
    tch::manual_seed(9);
    let shapes: [&[i64]; 3] = [&[3, 4], &[5], &[2, 3, 2]];
    let make = || -> Vec<Tensor> {
        tch::manual_seed(9);
        shapes.iter().map(|s| Tensor::randn(*s, (Kind::Float, tch::Device::Cpu)).set_requires_grad(true)).collect()
    };
    let (params, reference) = (make(), make());
    let before: Vec<Tensor> = params.iter().map(|p| p.detach().copy()).collect();
    let flat = FlatParams::new(&params, 2).unwrap().expect("float32 on one device is flattened");
    // Values kept; gradients defined, zero, and in the buffer; the extra floats after them.
    assert_eq!(flat.values.size(), [12 + 5 + 12]);
    assert_eq!(flat.grads_and_extra.size(), [12 + 5 + 12 + 2]);
    for (p, b) in params.iter().zip(&before) {
        assert!(p.detach().equal(b), "flattening changed a value");
        assert_eq!(p.grad().abs().sum(Kind::Double).double_value(&[]), 0.0);
    }
    let mut adam = Adam::new(config(0.01), &params).unwrap();
    let mut adam_ref = Adam::new(config(0.01), &reference).unwrap();
    for step in 0..3 {
        let xs: Vec<Tensor> = params.iter().map(|p| p.randn_like()).collect();
        let _ = flat.grads_and_extra.shallow_clone().zero_();
        for p in &reference {
            let _ = p.grad().f_zero_();
        }
        // Two backward passes: autograd accumulates into the flat buffer in place.
        for _ in 0..2 {
            let loss = |ps: &[Tensor]| -> Tensor {
                ps.iter()
                    .zip(&xs)
                    .map(|(p, x)| (p * x).square().sum(Kind::Float))
                    .fold(Tensor::from(0.0f32), |a, b| a + b)
            };
            loss(&params).backward();
            loss(&reference).backward();
        }
        let want: Vec<Tensor> = reference.iter().map(|p| p.grad().reshape([-1])).collect();
        assert!(flat.grads().unwrap().equal(&Tensor::cat(&want, 0)), "step {step}: the buffer is not the gradients");
        assert_eq!(flat.extra().unwrap().size(), [2]);
        if step == 2 {
            let norm = flat.clip_grad_norm(0.5).unwrap();
            let norm_ref = clip_grad_norm(&reference, 0.5).unwrap();
            assert!((norm - norm_ref).abs() <= 1e-9 * norm_ref, "{norm} vs {norm_ref}");
            for (p, r) in params.iter().zip(&reference) {
                assert!(p.grad().allclose(&r.grad(), 1e-6, 1e-7, false), "clipped gradients differ");
            }
            for (p, r) in params.iter().zip(&reference) {
                let _ = r.grad().f_copy_(&p.grad());
            }
        }
        adam.step_flat(&flat, 0.01).unwrap();
        adam_ref.step(&reference, 0.01).unwrap();
        for (k, (p, r)) in params.iter().zip(&reference).enumerate() {
            assert!(p.detach().equal(&r.detach()), "step {step}: parameter {k} differs from per-tensor Adam");
        }
    }
    // The parameters are views of the buffer: writing the buffer moves them.
    let _ = flat.values.shallow_clone().fill_(3.0);
    assert_eq!(params[1].double_value(&[4]), 3.0);
}
