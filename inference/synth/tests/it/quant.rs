//! int16: the AVX2 product equals the scalar integer emulation exactly, and
//! cannot overflow at the extremes.

use dv_synth::kernels::avx2_matvec_i16;
use dv_synth::quant::{matvec_i16_reference, quantize_into, QuantLimits};
use dv_synth::Rng;

use crate::avx2_or_note;

#[test]
fn avx2_int16_product_equals_scalar_emulation() {
    if avx2_or_note("int16 product").is_none() {
        return;
    }
    let mut rng = Rng::new(3);
    for (rows, cols) in [(64, 128), (160, 32), (256, 256), (8, 8), (320, 64), (16, 24)] {
        let w: Vec<f32> = (0..rows * cols).map(|_| rng.normal()).collect();
        let x: Vec<f32> = (0..cols).map(|_| rng.normal()).collect();
        let y0: Vec<f32> = (0..rows).map(|_| rng.normal()).collect();
        let mut y = y0.clone();
        let dv_synth::kernels::Quantized { wq, scale, xq, sx } = avx2_matvec_i16(&w, rows, cols, &x, &mut y).unwrap();
        // The AVX2 quantizer equals the scalar one bit for bit.
        let mut xq_ref = vec![0i16; cols];
        let sx_ref = quantize_into(&x, QuantLimits::for_inputs(cols).input_max, &mut xq_ref);
        assert_eq!((&xq, sx.to_bits()), (&xq_ref, sx_ref.to_bits()), "{rows}x{cols}: quantized input");
        let mut want = y0.clone();
        matvec_i16_reference(&wq, &scale, &xq, sx, &mut want);
        assert_eq!(y, want, "{rows}x{cols}");
        // And it approximates the float product.
        let exact: Vec<f32> =
            (0..rows).map(|o| y0[o] + (0..cols).map(|j| w[o * cols + j] * x[j]).sum::<f32>()).collect();
        let err = crate::max_abs_diff(&y, &exact);
        assert!(err < 2e-3 * (cols as f32).sqrt(), "{rows}x{cols}: {err}");
    }
}

#[test]
fn int16_limits_rule_out_overflow() {
    for n in [2usize, 64, 128, 256, 1024] {
        let l = QuantLimits::for_inputs(n);
        assert!(n as i64 * l.weight_max as i64 * l.input_max as i64 <= i32::MAX as i64, "n = {n}");
    }
    assert_eq!(QuantLimits::for_inputs(128).weight_max, 4095);
    if avx2_or_note("int16 overflow").is_none() {
        return;
    }
    // Worst case: every product at its maximum, same sign.
    let (rows, cols) = (8, 256);
    let w = vec![1.0f32; rows * cols];
    let x = vec![-1.0f32; cols];
    let mut y = vec![0.0f32; rows];
    avx2_matvec_i16(&w, rows, cols, &x, &mut y).unwrap();
    for v in y {
        assert!((v + 256.0).abs() < 1e-3, "{v}");
    }
}
