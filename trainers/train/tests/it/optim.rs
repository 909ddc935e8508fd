use dv_train::{clip_grad_norm, Adam, AdamConfig, StepAnnealing};
use tch::{Kind, Tensor};

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
    let s = StepAnnealing { rate: 0.95, every: 500 };
    assert_eq!(s.lr(1e-4, 0), 1e-4);
    assert_eq!(s.lr(1e-4, 499), 1e-4);
    assert!((s.lr(1e-4, 500) - 0.95e-4).abs() < 1e-18);
    assert!((s.lr(1e-4, 1999) - 1e-4 * 0.95f64.powi(3)).abs() < 1e-18);
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
