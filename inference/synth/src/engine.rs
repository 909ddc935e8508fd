//! The AVX2 engine: the WaveNet step of `reference.rs` over packed weights
//! (`packed.rs`), with the work arranged for speed (Deep Voice §5.1):
//!
//! * Per-layer rings of past inputs ("fast WaveNet"): x^(i)(t − d_i) is read
//!   back, never recomputed.
//! * W_prev and W_cur fused into one `[2r, 2r]` product over
//!   `[x^(i)(t − d_i); x^(i)(t)]`.
//! * W_res and this layer's block of W_skip fused into one `[r + s, r]`
//!   product over h^(i), accumulated straight into `[x; q]`, so the skip
//!   projection over `ℓ·r` inputs is summed layer by layer (eq. 7) and
//!   h = [h^(0); …] is never stored.
//! * Conditioning plus layer bias `L_i + B^(i)` formed once per frame (64
//!   samples), and the embedding bias folded into `embed_cur`.
//! * The two output layers skip the inputs that the relu zeroed.
//!
//! With `split` (the two-thread pipeline) the fused matrices are kept
//! apart instead: W_prev for the auxiliary thread's precompute, W_skip for
//! its accumulation.

use crate::nonlinear::Nonlinearity;
use crate::packed::{Aligned, PackedF32, PackedI16};
use crate::simd::Avx2;
use crate::wavenet::WavenetWeights;

/// Weight precision of the matrix-vector products.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// float32 weights and activations.
    #[default]
    F32,
    /// int16 weights and activations, int32 sums (`quant.rs`).
    Int16,
}

/// One packed matrix in either precision.
#[derive(Debug, Clone)]
pub(crate) enum Linear {
    F32(PackedF32),
    I16(PackedI16),
}

impl Linear {
    fn new(w: &[f32], rows: usize, cols: usize, precision: Precision) -> Self {
        match precision {
            Precision::F32 => Self::F32(PackedF32::new(w, rows, cols)),
            Precision::Int16 => Self::I16(PackedI16::new(w, rows, cols)),
        }
    }

    /// `y += W x`; `q` is int16 scratch of at least `cols`.
    #[inline]
    pub fn acc(&self, avx: Avx2, x: &[f32], y: &mut [f32], q: &mut [i16]) {
        match self {
            Self::F32(w) => avx.matvec(w, x, y),
            Self::I16(w) => {
                let q = &mut q[..w.cols];
                let sx = avx.quantize(x, w.limits.input_max, q);
                avx.matvec_i16(w, q, sx, y);
            }
        }
    }

    /// `y += W x` where `x` is zero outside `idx` (used by f32 only).
    #[inline]
    pub fn acc_sparse(&self, avx: Avx2, x: &[f32], idx: &[u16], y: &mut [f32], q: &mut [i16]) {
        match self {
            Self::F32(w) => avx.matvec_sparse(w, x, idx, y),
            Self::I16(_) => self.acc(avx, x, y, q),
        }
    }

    pub fn bytes(&self) -> usize {
        match self {
            Self::F32(w) => w.rows * w.cols * 4,
            Self::I16(w) => w.rows * w.cols * 2 + w.rows * 4,
        }
    }
}

/// A layer's dilated convolution: fused, or split for the pipeline.
#[derive(Debug, Clone)]
pub(crate) enum Conv {
    /// `[2r, 2r]` over `[x(t − d); x(t)]`.
    Fused(Linear),
    /// `[2r, r]` each.
    Split { prev: Linear, cur: Linear },
}

/// A layer's outputs: W_res with this layer's W_skip block, fused or split.
#[derive(Debug, Clone)]
pub(crate) enum Out {
    /// `[r + s, r]` (or `[s, r]` for the last layer) into `[x; q]` (or `q`).
    Fused(Linear),
    /// W_res `[r, r]` (none for the last layer) and W_skip block `[s, r]`.
    Split { res: Option<Linear>, skip: Linear },
}

#[derive(Debug, Clone)]
pub(crate) struct Layer {
    pub dilation: usize,
    pub hist_off: usize,
    pub conv: Conv,
    pub out: Out,
    pub bias: Vec<f32>,  // [2r]
    pub b_res: Vec<f32>, // [r], empty for the last layer
}

/// The packed WaveNet.
#[derive(Debug, Clone)]
pub(crate) struct Engine {
    pub avx: Avx2,
    pub nl: Nonlinearity,
    pub r: usize,
    pub s: usize,
    pub a: usize,
    pub embed_cur: Vec<f32>,  // [a, r], embed_bias folded in
    pub embed_prev: Vec<f32>, // [a, r]
    pub layers: Vec<Layer>,
    pub skip_b: Vec<f32>,
    pub relu: Linear,
    pub relu_b: Vec<f32>,
    pub out: Linear,
    pub out_b: Vec<f32>,
    pub history_len: usize,
}

/// Per-utterance state and buffers of [`Engine::step`].
#[derive(Debug, Clone)]
pub(crate) struct EngineState {
    pub t: usize,
    pub frame: Option<usize>,
    pub hist: Aligned<f32>,  // Σ d_i · r
    pub condb: Aligned<f32>, // [ℓ·2r] L + B for the current frame
    pub xin: Aligned<f32>,   // [2r]
    pub act: Aligned<f32>,   // [2r]
    pub h: Aligned<f32>,     // [r]
    pub xq: Aligned<f32>,    // [r + s]: x, then q
    pub idx_s: Vec<u16>,     // [s]
    pub za: Aligned<f32>,    // [a]
    pub idx_a: Vec<u16>,     // [a]
    pub qbuf: Vec<i16>,      // int16 activations, max cols
    // The two-thread pipeline's buffers (unused on one thread).
    pub aprev: Aligned<f32>, // [ℓ·2r] W_prev_i · x^(i)(t − d_i) for the next step
    pub hall: Aligned<f32>,  // [ℓ·r] h^(i)(t), main → auxiliary
    pub zs: Aligned<f32>,    // [s] relu(q), auxiliary → main
    pub qbuf_aux: Vec<i16>,
}

impl Engine {
    pub fn new(avx: Avx2, w: &WavenetWeights, nl: Nonlinearity, precision: Precision, split: bool) -> Self {
        let (r, s, a, l) = (w.r, w.s, w.a, w.layers());
        let lin = |m: &[f32], rows, cols| Linear::new(m, rows, cols, precision);
        let mut layers = Vec::with_capacity(l);
        let mut hist_off = 0;
        for (i, lw) in w.layers.iter().enumerate() {
            let conv = if split {
                Conv::Split { prev: lin(&lw.w_prev, 2 * r, r), cur: lin(&lw.w_cur, 2 * r, r) }
            } else {
                let mut fused = vec![0.0f32; 2 * r * 2 * r]; // [2r, 2r] = [w_prev | w_cur]
                for o in 0..2 * r {
                    fused[o * 2 * r..o * 2 * r + r].copy_from_slice(&lw.w_prev[o * r..(o + 1) * r]);
                    fused[o * 2 * r + r..(o + 1) * 2 * r].copy_from_slice(&lw.w_cur[o * r..(o + 1) * r]);
                }
                Conv::Fused(lin(&fused, 2 * r, 2 * r))
            };
            // This layer's W_skip block: columns i·r .. (i+1)·r of [s, ℓ·r].
            let mut skip = vec![0.0f32; s * r];
            for o in 0..s {
                skip[o * r..(o + 1) * r].copy_from_slice(&w.skip_w[o * l * r + i * r..o * l * r + (i + 1) * r]);
            }
            let (out, b_res) = match (&lw.res, split) {
                (Some((w_res, b_res)), false) => {
                    let mut fused = w_res.clone();
                    fused.extend_from_slice(&skip); // [r + s, r]
                    (Out::Fused(lin(&fused, r + s, r)), b_res.clone())
                }
                (None, false) => (Out::Fused(lin(&skip, s, r)), Vec::new()),
                (res, true) => (
                    Out::Split { res: res.as_ref().map(|(m, _)| lin(m, r, r)), skip: lin(&skip, s, r) },
                    res.as_ref().map(|(_, b)| b.clone()).unwrap_or_default(),
                ),
            };
            layers.push(Layer { dilation: lw.dilation, hist_off, conv, out, bias: lw.bias.clone(), b_res });
            hist_off += lw.dilation * r;
        }
        let mut embed_cur = w.embed_cur.clone();
        for row in embed_cur.chunks_exact_mut(r) {
            for (v, b) in row.iter_mut().zip(&w.embed_bias) {
                *v += b;
            }
        }
        Self {
            avx,
            nl,
            r,
            s,
            a,
            embed_cur,
            embed_prev: w.embed_prev.clone(),
            layers,
            skip_b: w.skip_b.clone(),
            relu: lin(&w.relu_w, a, s),
            relu_b: w.relu_b.clone(),
            out: lin(&w.out_w, a, a),
            out_b: w.out_b.clone(),
            history_len: hist_off,
        }
    }

    /// Bytes of packed weights (what must stay in cache).
    pub fn weight_bytes(&self) -> usize {
        let per_layer: usize = self
            .layers
            .iter()
            .map(|l| {
                let c = match &l.conv {
                    Conv::Fused(m) => m.bytes(),
                    Conv::Split { prev, cur } => prev.bytes() + cur.bytes(),
                };
                let o = match &l.out {
                    Out::Fused(m) => m.bytes(),
                    Out::Split { res, skip } => res.as_ref().map_or(0, |m| m.bytes()) + skip.bytes(),
                };
                c + o
            })
            .sum();
        per_layer + self.relu.bytes() + self.out.bytes()
    }

    pub fn make_state(&self) -> EngineState {
        let (r, s, a) = (self.r, self.s, self.a);
        let l = self.layers.len();
        EngineState {
            t: 0,
            frame: None,
            hist: Aligned::zeros(self.history_len),
            condb: Aligned::zeros(l * 2 * r),
            xin: Aligned::zeros(2 * r),
            act: Aligned::zeros(2 * r),
            h: Aligned::zeros(r),
            xq: Aligned::zeros(r + s),
            idx_s: vec![0; s],
            za: Aligned::zeros(a),
            idx_a: vec![0; a],
            qbuf: vec![0; (2 * r).max(s).max(a)],
            aprev: Aligned::zeros(l * 2 * r),
            hall: Aligned::zeros(l * r),
            zs: Aligned::zeros(s),
            qbuf_aux: vec![0; (2 * r).max(s).max(a)],
        }
    }

    pub fn reset(&self, st: &mut EngineState) {
        st.t = 0;
        st.frame = None;
        st.hist.as_mut_slice().fill(0.0);
        st.aprev.as_mut_slice().fill(0.0);
    }

    /// Forms `L_i + B^(i)` for every layer from one conditioning row.
    pub fn load_frame(&self, st: &mut EngineState, cond_row: &[f32]) {
        let r2 = 2 * self.r;
        for (i, layer) in self.layers.iter().enumerate() {
            let dst = &mut st.condb.as_mut_slice()[i * r2..(i + 1) * r2];
            for ((d, c), b) in dst.iter_mut().zip(&cond_row[i * r2..(i + 1) * r2]).zip(&layer.bias) {
                *d = c + b;
            }
        }
    }

    /// x^(0) = embed_cur[y1] + embed_prev[y2] (+ bias, folded) into `x`.
    #[inline]
    pub fn embed(&self, y1: u8, y2: u8, x: &mut [f32]) {
        let r = self.r;
        let (ec, ep) = (&self.embed_cur[y1 as usize * r..][..r], &self.embed_prev[y2 as usize * r..][..r]);
        for ((xv, c), p) in x.iter_mut().zip(ec).zip(ep) {
            *xv = c + p;
        }
    }

    /// z_s → z_a → logits, skipping zeroed inputs.
    #[inline]
    pub fn output(
        &self,
        q: &mut [f32],
        st_idx_s: &mut [u16],
        za: &mut [f32],
        idx_a: &mut [u16],
        qbuf: &mut [i16],
        logits: &mut [f32],
    ) {
        let avx = self.avx;
        let ns = avx.relu_nonzero(q, st_idx_s);
        za.copy_from_slice(&self.relu_b);
        self.relu.acc_sparse(avx, q, &st_idx_s[..ns], za, qbuf);
        let na = avx.relu_nonzero(za, idx_a);
        logits.copy_from_slice(&self.out_b);
        self.out.acc_sparse(avx, za, &idx_a[..na], logits, qbuf);
    }

    /// One step with fused matrices: the logits of y(t) from y(t−1) = `y1`,
    /// y(t−2) = `y2`; `load_frame` must have been called for t's frame.
    ///
    /// # Shapes
    /// `logits`: `[a]`
    pub fn step(&self, st: &mut EngineState, y1: u8, y2: u8, logits: &mut [f32]) {
        let (avx, r, nl) = (self.avx, self.r, self.nl);
        let EngineState { t, hist, condb, xin, act, h, xq, idx_s, za, idx_a, qbuf, aprev, .. } = st;
        let (hist, xq) = (hist.as_mut_slice(), xq.as_mut_slice());
        let (xin, act, h) = (xin.as_mut_slice(), act.as_mut_slice(), h.as_mut_slice());
        self.embed(y1, y2, &mut xq[..r]);
        xq[r..].copy_from_slice(&self.skip_b);
        for (i, layer) in self.layers.iter().enumerate() {
            let slot = layer.hist_off + (*t % layer.dilation) * r;
            xin[..r].copy_from_slice(&hist[slot..slot + r]); // x(t − d)
            xin[r..].copy_from_slice(&xq[..r]); // x(t)
            hist[slot..slot + r].copy_from_slice(&xq[..r]);
            let cb = &condb.as_slice()[i * 2 * r..(i + 1) * 2 * r];
            match &layer.conv {
                Conv::Fused(m) => {
                    act.copy_from_slice(cb);
                    m.acc(avx, xin, act, qbuf);
                }
                Conv::Split { prev, cur } => {
                    // The pipeline's order of operations, so one thread and
                    // two give bit-identical results.
                    let ap = &mut aprev.as_mut_slice()[i * 2 * r..(i + 1) * 2 * r];
                    ap.fill(0.0);
                    prev.acc(avx, &xin[..r], ap, qbuf);
                    for ((a, c), p) in act.iter_mut().zip(cb).zip(ap.iter()) {
                        *a = c + p;
                    }
                    cur.acc(avx, &xin[r..], act, qbuf);
                }
            }
            avx.gate(act, h, nl);
            for (x, b) in xq[..r].iter_mut().zip(&layer.b_res) {
                *x += b;
            }
            match &layer.out {
                Out::Fused(m) if layer.b_res.is_empty() => m.acc(avx, h, &mut xq[r..], qbuf),
                Out::Fused(m) => m.acc(avx, h, xq, qbuf),
                Out::Split { res, skip } => {
                    if let Some(res) = res {
                        res.acc(avx, h, &mut xq[..r], qbuf);
                    }
                    skip.acc(avx, h, &mut xq[r..], qbuf);
                }
            }
        }
        self.output(&mut xq[r..], idx_s, za.as_mut_slice(), idx_a, qbuf, logits);
        *t += 1;
    }
}
