//! A CPU model of the tile kernel's activation rounding (`wavenet_tiles`),
//! to tell without a GPU how far its distributions will lie from the
//! reference for a given voice.
//!
//! The tile kernel multiplies bfloat16 weights by 16-bit activations on the
//! tensor cores and sums in float32. It rounds exactly four activations,
//! each where it enters a product ([`Rounding`]): the dilated product's
//! input `[x(t − d) | x(t)]`, the gate output h (read by the residual and
//! skip products), relu(skip) and the relu layer's output. The residual
//! stream, the history rings, every sum, bias and the conditioning stay
//! float32. [`forward`] is the reference step (`dv_synth`'s scalar
//! reference, FORMAT.md's equations) with those four roundings, so
//! [`drift`] — the largest |Δp| between it and the unrounded step, teacher-
//! forced on the unrounded step's own mode-sampled stream — predicts what
//! the parity harness will measure on the GPU. It leaves out the order of
//! the tensor cores' float32 sums (about 1e-6 here) and, for half
//! precision, the weights below 2^-28 of their set's largest that
//! [`crate::model::MultiLayout::tiles_f16`] flushes.

use dv_synth::Conditioning;
use dv_voice::Voice;

use crate::error::GpuError;
use crate::model::{bf16_bits, bf16_value, Weights, A};

/// How the kernel stores its 16-bit activations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activations {
    /// Float32, unrounded (the reference).
    F32,
    /// Two bfloat16 terms, hi + lo (`tiles`, the default).
    Bf16TwoTerms,
    /// IEEE half precision, one term (`tiles-f16`).
    F16,
}

impl Activations {
    fn round(self, v: f32) -> f32 {
        match self {
            Activations::F32 => v,
            Activations::Bf16TwoTerms => {
                let hi = bf16_value(bf16_bits(v));
                hi + bf16_value(bf16_bits(v - hi))
            }
            Activations::F16 => half::f16::from_f32(v).to_f32(),
        }
    }
}

/// Which of the four product inputs are rounded (all four in the kernel;
/// one at a time shows where the error comes from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rounding {
    pub kind: Activations,
    /// `[x(t − d) | x(t)]` into the dilated product.
    pub dilated_input: bool,
    /// h into the residual and skip products.
    pub gate_output: bool,
    /// relu(skip) into the relu layer.
    pub skip_relu: bool,
    /// The relu layer's output into the output layer.
    pub relu_output: bool,
}

impl Rounding {
    /// All four, as the kernel rounds them.
    pub fn kernel(kind: Activations) -> Self {
        Self { kind, dilated_input: true, gate_output: true, skip_relu: true, relu_output: true }
    }

    /// None: the reference.
    pub fn none() -> Self {
        Self { kind: Activations::F32, dilated_input: false, gate_output: false, skip_relu: false, relu_output: false }
    }

    fn at(&self, on: bool, v: f32) -> f32 {
        if on {
            self.kind.round(v)
        } else {
            v
        }
    }
}

/// The per-stream state of [`forward`]: each layer's ring of past inputs.
pub struct State {
    history: Vec<f32>,
    offsets: Vec<usize>,
    t: usize,
}

impl State {
    pub fn new(w: &Weights) -> Self {
        let (offsets, rows) = w.sizes.history_offsets();
        Self { history: vec![0.0; rows * w.sizes.residual], offsets, t: 0 }
    }
}

fn tanh(x: f32) -> f32 {
    x.tanh()
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// One step: the distribution of y(t) given y(t−1) = `y1`, y(t−2) = `y2`
/// and conditioning row `cond` (`[ℓ·2r]`), with `round`'s roundings.
pub fn forward(w: &Weights, st: &mut State, round: &Rounding, y1: usize, y2: usize, cond: &[f32]) -> Vec<f32> {
    let (l, r, s) = (w.sizes.layers, w.sizes.residual, w.sizes.skip);
    let mut x: Vec<f32> =
        (0..r).map(|j| w.embed_cur[y1 * r + j] + w.embed_prev[y2 * r + j] + w.embed_bias[j]).collect();
    let mut h_all = vec![0f32; l * r];
    let mut hp = vec![0f32; 2 * r];
    for i in 0..l {
        let d = w.sizes.dilations[i];
        let slot = (st.offsets[i] + st.t % d) * r;
        let old: Vec<f32> = st.history[slot..slot + r].iter().map(|&v| round.at(round.dilated_input, v)).collect();
        let cur: Vec<f32> = x.iter().map(|&v| round.at(round.dilated_input, v)).collect();
        for (o, hpo) in hp.iter_mut().enumerate() {
            let (wp, wc) = (&w.w_prev[i][o * r..(o + 1) * r], &w.w_cur[i][o * r..(o + 1) * r]);
            let (mut acc_p, mut acc_c) = (0f32, 0f32);
            for j in 0..r {
                acc_p += wp[j] * old[j];
                acc_c += wc[j] * cur[j];
            }
            *hpo = acc_p + acc_c + w.gate_b[i * 2 * r + o] + cond[i * 2 * r + o];
        }
        st.history[slot..slot + r].copy_from_slice(&x);
        let h = &mut h_all[i * r..(i + 1) * r];
        for j in 0..r {
            h[j] = round.at(round.gate_output, tanh(hp[j]) * sigmoid(hp[r + j]));
        }
        if let Some(wr) = w.w_res.get(i) {
            for o in 0..r {
                let row = &wr[o * r..(o + 1) * r];
                let acc: f32 = row.iter().zip(h.iter()).fold(0.0, |a, (p, q)| a + p * q);
                x[o] += acc + w.res_b[i * r + o];
            }
        }
    }
    let linear = |m: &[f32], b: &[f32], v: &[f32], out: usize| -> Vec<f32> {
        let n = v.len();
        (0..out).map(|o| b[o] + m[o * n..(o + 1) * n].iter().zip(v).fold(0.0f32, |a, (p, q)| a + p * q)).collect()
    };
    let zs: Vec<f32> =
        linear(&w.skip_w, &w.skip_b, &h_all, s).into_iter().map(|v| round.at(round.skip_relu, v.max(0.0))).collect();
    let za: Vec<f32> =
        linear(&w.relu_w, &w.relu_b, &zs, A).into_iter().map(|v| round.at(round.relu_output, v.max(0.0))).collect();
    let logits = linear(&w.out_w, &w.out_b, &za, A);
    st.t += 1;
    let m = logits.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    let e: Vec<f64> = logits.iter().map(|&v| ((v - m) as f64).exp()).collect();
    let z: f64 = e.iter().sum();
    e.iter().map(|&v| (v / z) as f32).collect()
}

/// The largest |Δp| between `round`'s step and the unrounded one over the
/// first `n` samples of `cond`, both teacher-forced on the unrounded
/// step's mode-sampled stream (argmax, the lowest class on ties), with the
/// voice's matrices rounded to bfloat16 as the tile kernel stores them.
pub fn drift(voice: &Voice, cond: &Conditioning, n: usize, round: &Rounding) -> Result<f64, GpuError> {
    let w = Weights::from_voice(&crate::parity::bf16_rounded(voice)?)?;
    let hop = w.sizes.hop;
    if cond.width() != w.sizes.conditioning_width() || cond.frames() * hop < n {
        return Err(GpuError::Shape {
            what: "conditioning (frames × width) for the emulated steps",
            expected: n.div_ceil(hop) * w.sizes.conditioning_width(),
            got: cond.frames() * cond.width(),
        });
    }
    let (mut exact, mut rounded) = (State::new(&w), State::new(&w));
    let (mut y1, mut y2) = (128usize, 128usize);
    let mut worst = 0f64;
    for t in 0..n {
        let row = cond.frame(t / hop);
        let p = forward(&w, &mut exact, &Rounding::none(), y1, y2, row);
        let q = forward(&w, &mut rounded, round, y1, y2, row);
        worst = p.iter().zip(&q).map(|(a, b)| (*a as f64 - *b as f64).abs()).fold(worst, f64::max);
        let y = p.iter().enumerate().fold(0, |best, (k, &v)| if v > p[best] { k } else { best });
        (y2, y1) = (y1, y);
    }
    Ok(worst)
}
