//! App. C approximations: maximum errors over a dense grid, against the
//! paper's figures.
//!
//! Measured (this implementation, f32): tanh 1.514e-3 (paper: 1.5e-3),
//! σ 2.587e-3 (paper: 2.5e-3), e^x on (−∞, 0]: 3.8e-5 absolute, 4.8e-5
//! relative (paper: 2.4e-5). The paper's figures are rounded down; for e^x,
//! eq. 33's g(z) is off by up to 4.8e-5 from 2^z − z, which is 2.4e-5
//! relative to 2^z only when the error is divided by 2^z ≈ 2 at z → 1: in
//! the next binade (the bit pattern carries into the exponent) it is not.

use dv_synth::nonlinear::{exp_approx, sigmoid_approx, tanh_approx};

fn grid(lo: f32, hi: f32, n: usize) -> impl Iterator<Item = f32> {
    (0..=n).map(move |i| lo + (hi - lo) * i as f32 / n as f32)
}

#[test]
fn tanh_and_sigmoid_approximations_are_within_the_paper_bounds() {
    let mut mt = 0.0f64;
    let mut ms = 0.0f64;
    for x in grid(-30.0, 30.0, 3_000_000) {
        let xd = x as f64;
        mt = mt.max((tanh_approx(x) as f64 - xd.tanh()).abs());
        ms = ms.max((sigmoid_approx(x) as f64 - 1.0 / (1.0 + (-xd).exp())).abs());
    }
    eprintln!("max |tanh error| = {mt:.4e}, max |sigmoid error| = {ms:.4e}");
    assert!(mt <= 1.52e-3, "tanh {mt}");
    assert!(mt >= 1.4e-3, "tanh error {mt} is implausibly small: is the approximation used?");
    assert!(ms <= 2.6e-3, "sigmoid {ms}");
    assert!(ms >= 2.4e-3, "sigmoid error {ms} is implausibly small");
    // Odd / complementary symmetry of the formulas.
    for x in grid(-8.0, 8.0, 1000) {
        assert_eq!(tanh_approx(-x), -tanh_approx(x));
        assert!((sigmoid_approx(x) + sigmoid_approx(-x) - 1.0).abs() < 1e-6);
    }
}

#[test]
fn exp_approximation_error() {
    let mut abs = 0.0f64;
    let mut rel = 0.0f64;
    for x in grid(-80.0, 0.0, 4_000_000) {
        let e = (x as f64).exp();
        let a = exp_approx(x) as f64;
        abs = abs.max((a - e).abs());
        rel = rel.max((a - e).abs() / e);
    }
    eprintln!("e^x on [-80, 0]: max abs error {abs:.3e}, max rel error {rel:.3e}");
    assert!(abs <= 4.0e-5, "abs {abs}");
    assert!(rel <= 5.0e-5, "rel {rel}");
    assert!(rel >= 2.0e-5, "rel {rel} implausibly small");
    assert_eq!(exp_approx(-100.0), 0.0);
    // Above 0 (not used by softmax) it stays relatively accurate.
    assert!(((exp_approx(5.0) as f64) / 5f64.exp() - 1.0).abs() < 5e-5);
}
