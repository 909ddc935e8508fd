//! Exact and approximate nonlinearities (Deep Voice §5.1, App. C), scalar.
//! The AVX2 kernels compute the same formulas eight lanes at a time.
//!
//! Approximations (App. C):
//!
//! * `ẽ(x) = 1 + |x| + 0.5658 x² + 0.143 x⁴ ≈ e^|x|` (eq. 30), and
//!   `tanh(x) ≈ sign(x) (ẽ − 1/ẽ) / (ẽ + 1/ẽ)` (eq. 28),
//!   `σ(x) ≈ ẽ / (1 + ẽ)` for x ≥ 0, `1 / (1 + ẽ)` for x < 0 (eq. 29).
//!   The paper bounds the absolute errors by 1.5e-3 (tanh) and 2.5e-3 (σ).
//! * `e^x = 2^(x / ln 2)`, and `2^x` by writing the float's bits directly:
//!   `I = (x + 126 + g(z)) · 2^23` with `z = x − ⌊x⌋` and
//!   `g(z) = −4.7259162 + 27.7280233 / (4.84252568 − z) − 1.49012907 z ≈ 2^z − z`
//!   (eqs. 31–33). The paper gives a maximum error of 2.4e-5 for
//!   `x ∈ (−∞, 0]`, where `e^x ≤ 1`, so absolute and relative error agree up
//!   to the factor e^x; the tests measure both. Inputs below −87 (where the
//!   exponent field would underflow) return 0, which is what softmax needs.

/// Which nonlinearities the sampler uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Nonlinearity {
    /// Library-accurate tanh, σ and exp (within a few ulp).
    #[default]
    Exact,
    /// The App. C approximations (about 30% faster in the paper).
    Approximate,
}

/// σ(x) = 1 / (1 + e^−x).
#[inline]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Inputs of the tanh and σ approximations are clamped to ±20 so that ẽ²
/// stays finite (tanh(±20) is ±1 in f32 either way).
pub(crate) const APPROX_CLAMP: f32 = 20.0;

/// ẽ(x) of eq. 30.
#[inline]
fn e_tilde(x: f32) -> f32 {
    let a = x.abs();
    let x2 = x * x;
    1.0 + a + 0.5658 * x2 + 0.143 * x2 * x2
}

/// tanh by eq. 28: `(ẽ² − 1) / (ẽ² + 1)`, the same quotient as
/// `(ẽ − 1/ẽ) / (ẽ + 1/ẽ)` with one division fewer.
#[inline]
pub fn tanh_approx(x: f32) -> f32 {
    let e = e_tilde(x.clamp(-APPROX_CLAMP, APPROX_CLAMP));
    let e2 = e * e;
    ((e2 - 1.0) / (e2 + 1.0)).copysign(x)
}

/// σ by eq. 29.
#[inline]
pub fn sigmoid_approx(x: f32) -> f32 {
    let x = x.clamp(-APPROX_CLAMP, APPROX_CLAMP);
    let e = e_tilde(x);
    if x >= 0.0 {
        e / (1.0 + e)
    } else {
        1.0 / (1.0 + e)
    }
}

/// g(z) ≈ 2^z − z on [0, 1) (eq. 33).
#[inline]
pub(crate) fn g(z: f32) -> f32 {
    -4.725_916_2 + 27.728_023 / (4.842_525_7 - z) - 1.490_129_1 * z
}

/// Lowest input of [`exp_approx`] that is not flushed to 0.
pub(crate) const EXP_APPROX_MIN: f32 = -87.0;

/// e^x by eqs. 31–33. Meant for `x ≤ 0` (softmax after subtracting the
/// maximum); accurate up to x ≈ 88, 0 below −87.
#[inline]
pub fn exp_approx(x: f32) -> f32 {
    if x < EXP_APPROX_MIN {
        return 0.0;
    }
    let t = x * std::f32::consts::LOG2_E;
    let z = t - t.floor();
    let bits = ((t + 126.0 + g(z)) * (1u32 << 23) as f32) as i32;
    f32::from_bits(bits as u32)
}

impl Nonlinearity {
    #[inline]
    pub fn tanh(self, x: f32) -> f32 {
        match self {
            Self::Exact => x.tanh(),
            Self::Approximate => tanh_approx(x),
        }
    }

    #[inline]
    pub fn sigmoid(self, x: f32) -> f32 {
        match self {
            Self::Exact => sigmoid(x),
            Self::Approximate => sigmoid_approx(x),
        }
    }

    #[inline]
    pub fn exp(self, x: f32) -> f32 {
        match self {
            Self::Exact => x.exp(),
            Self::Approximate => exp_approx(x),
        }
    }

    /// `p = softmax(logits)` with the max subtracted first.
    pub fn softmax(self, logits: &[f32], p: &mut [f32]) {
        let m = logits.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        let mut sum = 0.0f32;
        for (pi, &l) in p.iter_mut().zip(logits) {
            *pi = self.exp(l - m);
            sum += *pi;
        }
        let inv = 1.0 / sum;
        for pi in p.iter_mut() {
            *pi *= inv;
        }
    }
}
