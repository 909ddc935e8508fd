//! The scalar reference step: FORMAT.md's equations written out directly,
//! in f32 with sequential sums. It is the oracle every fast kernel is
//! checked against, and the `Kernel::Scalar` sampler.
//!
//! "Fast WaveNet" state: each layer keeps a ring of its last `d_i` inputs,
//! so x^(i)(t − d_i) is read back rather than recomputed.

#![allow(clippy::needless_range_loop)] // indices mirror the equations

use crate::nonlinear::Nonlinearity;
use crate::wavenet::WavenetWeights;

/// Per-utterance state and buffers of the reference step. Made by
/// [`Reference::make_state`]; a step allocates nothing.
#[derive(Debug, Clone)]
pub(crate) struct RefState {
    /// Layer i's ring of past inputs: `[d_i, r]` at `offsets[i]`.
    history: Vec<f32>,
    offsets: Vec<usize>,
    /// Steps taken (t of the next step).
    t: usize,
    x: Vec<f32>,     // [r]
    hp: Vec<f32>,    // [2r]
    h_all: Vec<f32>, // [ℓ·r]
    zs: Vec<f32>,    // [s]
    za: Vec<f32>,    // [a]
}

pub(crate) struct Reference {
    pub w: WavenetWeights,
    pub nl: Nonlinearity,
}

/// `y[o] = b[o] + Σ_j W[o, j] x[j]` for row-major W `[out, in]`.
fn linear(w: &[f32], b: &[f32], x: &[f32], y: &mut [f32]) {
    let n = x.len();
    for (o, yo) in y.iter_mut().enumerate() {
        let row = &w[o * n..(o + 1) * n];
        let mut acc = 0.0f32;
        for (wj, xj) in row.iter().zip(x) {
            acc += wj * xj;
        }
        *yo = b[o] + acc;
    }
}

impl Reference {
    pub fn make_state(&self) -> RefState {
        let (r, s, a, l) = (self.w.r, self.w.s, self.w.a, self.w.layers());
        let mut offsets = Vec::with_capacity(l);
        let mut o = 0;
        for layer in &self.w.layers {
            offsets.push(o);
            o += layer.dilation * r;
        }
        RefState {
            history: vec![0.0; o],
            offsets,
            t: 0,
            x: vec![0.0; r],
            hp: vec![0.0; 2 * r],
            h_all: vec![0.0; l * r],
            zs: vec![0.0; s],
            za: vec![0.0; a],
        }
    }

    pub fn reset(&self, st: &mut RefState) {
        st.history.fill(0.0);
        st.t = 0;
    }

    /// One step: the logits of y(t) given y(t−1) = `y1`, y(t−2) = `y2` and
    /// this sample's conditioning row `cond` (`[ℓ·2r]`).
    ///
    /// # Shapes
    /// * `cond`: `[ℓ·2r]`; `logits`: `[a]`
    pub fn step(&self, st: &mut RefState, y1: u8, y2: u8, cond: &[f32], logits: &mut [f32]) {
        let w = &self.w;
        let r = w.r;
        let (ec, ep) = (&w.embed_cur[y1 as usize * r..][..r], &w.embed_prev[y2 as usize * r..][..r]);
        for j in 0..r {
            st.x[j] = ec[j] + ep[j] + w.embed_bias[j];
        }
        for (i, layer) in w.layers.iter().enumerate() {
            let d = layer.dilation;
            let slot = st.offsets[i] + (st.t % d) * r;
            let old = &st.history[slot..slot + r]; // x^(i)(t − d)
            let li = &cond[i * 2 * r..(i + 1) * 2 * r];
            for o in 0..2 * r {
                let (wp, wc) = (&layer.w_prev[o * r..(o + 1) * r], &layer.w_cur[o * r..(o + 1) * r]);
                let mut acc_p = 0.0f32;
                let mut acc_c = 0.0f32;
                for j in 0..r {
                    acc_p += wp[j] * old[j];
                    acc_c += wc[j] * st.x[j];
                }
                st.hp[o] = acc_p + acc_c + layer.bias[o] + li[o];
            }
            st.history[slot..slot + r].copy_from_slice(&st.x);
            let h = &mut st.h_all[i * r..(i + 1) * r];
            for j in 0..r {
                h[j] = self.nl.tanh(st.hp[j]) * self.nl.sigmoid(st.hp[r + j]);
            }
            if let Some((w_res, b_res)) = &layer.res {
                for o in 0..r {
                    let row = &w_res[o * r..(o + 1) * r];
                    let mut acc = 0.0f32;
                    for j in 0..r {
                        acc += row[j] * h[j];
                    }
                    st.x[o] += acc + b_res[o];
                }
            }
        }
        linear(&w.skip_w, &w.skip_b, &st.h_all, &mut st.zs);
        st.zs.iter_mut().for_each(|v| *v = v.max(0.0));
        linear(&w.relu_w, &w.relu_b, &st.zs, &mut st.za);
        st.za.iter_mut().for_each(|v| *v = v.max(0.0));
        linear(&w.out_w, &w.out_b, &st.za, logits);
        st.t += 1;
    }
}
