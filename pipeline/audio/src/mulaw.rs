//! 8-bit mu-law companding (mu = 255), the WaveNet output alphabet
//! (Deep Voice App. A.3: "8-bit mu-law companded audio").
//!
//! Encoding: `y = sign(x) ln(1 + mu |x|) / ln(1 + mu)` for `x` clipped to
//! `[-1, 1]`, then `q = round((y + 1) / 2 * mu)` in `0..=255`. Decoding is the
//! exact inverse of the quantized grid: `y = 2 q / mu - 1`,
//! `x = sign(y) ((1 + mu)^|y| - 1) / mu`. So `encode(decode(q)) == q` for
//! every code, and code 128 is the smallest positive level (silence decodes
//! to ±1/(2·mu) in the companded domain, as in WaveNet implementations).

/// mu of 8-bit mu-law.
pub const MU: f32 = 255.0;

/// Compands and quantizes one sample in `[-1, 1]` (values outside are
/// clipped; NaN encodes as silence's code 128).
#[inline]
pub fn encode(x: f32) -> u8 {
    let x = if x.is_nan() { 0.0 } else { x.clamp(-1.0, 1.0) };
    let y = x.signum() * (MU * x.abs()).ln_1p() / MU.ln_1p();
    ((y + 1.0) * 0.5 * MU + 0.5).floor().clamp(0.0, 255.0) as u8
}

/// Expands a code back to a sample in `[-1, 1]`.
#[inline]
pub fn decode(q: u8) -> f32 {
    let y = 2.0 * q as f32 / MU - 1.0;
    y.signum() * ((1.0 + MU).powf(y.abs()) - 1.0) / MU
}

/// Encodes a buffer into a caller-owned one of the same length.
///
/// # Panics
/// Never; extra output is left untouched and extra input ignored.
pub fn encode_into(x: &[f32], out: &mut [u8]) {
    for (o, v) in out.iter_mut().zip(x) {
        *o = encode(*v);
    }
}

/// Decodes a buffer into a caller-owned one of the same length.
pub fn decode_into(q: &[u8], out: &mut [f32]) {
    for (o, v) in out.iter_mut().zip(q) {
        *o = decode(*v);
    }
}
