//! int16 weights (Deep Voice §5.1: "weight matrices quantized to int16").
//!
//! Choice: int16 weights × int16 activations with int32 accumulation
//! (`vpmaddwd` + `vpaddd`: 16 multiply-adds per instruction pair against 8
//! for an f32 FMA, and half the weight bytes), rather than int16 weights ×
//! f32 activations (which would widen every weight back to f32 before the
//! FMA, costing more instructions than it saves in bandwidth).
//!
//! * Weights: one scale per output row, `scale_o = max_j |W[o, j]| / Wm`,
//!   `Wq = round(W / scale_o)`.
//! * Activations: one scale per input vector, per matrix-vector product,
//!   `sx = max_j |x_j| / Xm`, `xq = round(x / sx)`.
//! * `y_o = b_o + scale_o · sx · Σ_j Wq[o, j] xq[j]`, the sum exact in int32.
//!
//! Overflow is impossible by construction: `|Σ| ≤ n · Wm · Xm`, and the
//! limits are `Wm = Xm = ⌊√((2^31 − 1) / n)⌋` (capped at 32767) for `n`
//! inputs: 13 bits for n = 64, 12.0 for n = 128, 11.5 for n = 256.

/// The ranges of quantized weights and activations for one matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantLimits {
    pub weight_max: i32,
    pub input_max: i32,
}

impl QuantLimits {
    /// Limits for a matrix with `n` inputs (columns).
    pub fn for_inputs(n: usize) -> Self {
        let m = (((i32::MAX as f64) / n.max(1) as f64).sqrt().floor() as i32).min(i16::MAX as i32);
        Self { weight_max: m, input_max: m }
    }
}

/// Per-row quantization of row-major `w` (`[rows, cols]`) to `±max`.
/// Returns the int16 matrix and the row scales (`W ≈ Wq · scale`); an
/// all-zero row gets scale 0.
pub fn quantize_rows(w: &[f32], rows: usize, cols: usize, max: i32) -> (Vec<i16>, Vec<f32>) {
    let mut q = vec![0i16; rows * cols];
    let mut scales = vec![0.0f32; rows];
    for o in 0..rows {
        let row = &w[o * cols..(o + 1) * cols];
        let (qs, sc) = (&mut q[o * cols..(o + 1) * cols], &mut scales[o]);
        *sc = quantize_into(row, max, qs);
    }
    (q, scales)
}

/// Quantizes `x` to `±max` into `q` (round half to even, as `vcvtps2dq`);
/// returns the scale (`x ≈ q · scale`, 0 for an all-zero `x`). The scalar
/// oracle of the AVX2 quantizer, which gives bit-identical results.
#[inline]
pub fn quantize_into(x: &[f32], max: i32, q: &mut [i16]) -> f32 {
    let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    if amax == 0.0 {
        q.fill(0);
        return 0.0;
    }
    let scale = amax / max as f32;
    let inv = max as f32 / amax;
    for (qi, &v) in q.iter_mut().zip(x) {
        *qi = ((v * inv).round_ties_even() as i32).clamp(-max, max) as i16;
    }
    scale
}

/// Scalar emulation of the int16 product, the oracle of the AVX2 kernel:
/// `y[o] += scale[o] · sx · Σ_j Wq[o, j] xq[j]` (row-major `wq`).
pub fn matvec_i16_reference(wq: &[i16], scale: &[f32], xq: &[i16], sx: f32, y: &mut [f32]) {
    let n = xq.len();
    for (o, yo) in y.iter_mut().enumerate() {
        let acc: i32 = wq[o * n..(o + 1) * n].iter().zip(xq).map(|(&a, &b)| a as i32 * b as i32).sum();
        *yo += acc as f32 * (scale[o] * sx);
    }
}
