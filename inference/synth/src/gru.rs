//! Dense layers and GRU cells with `torch.nn.GRU`'s gate order and
//! equations, in f64, shared by the duration model and the G2P model.
//! Both run once per utterance or word over short sequences, so they are
//! written for accuracy, not speed.

use dv_voice::{VoiceError, Weights};

use crate::error::SynthError;

/// The tensor `name` of `weights`.
pub(crate) fn tensor<'a>(weights: &'a Weights, name: &str) -> Result<&'a dv_voice::Tensor, SynthError> {
    Ok(weights.get(name).ok_or_else(|| VoiceError::MissingTensor { name: name.to_string(), expected: vec![] })?)
}

/// A `[rows, cols]` matrix `[out, in]` and its bias: `y = W x + b`.
#[derive(Debug, Clone)]
pub(crate) struct Dense {
    w: Vec<f32>, // [rows, cols]
    b: Vec<f32>, // [rows]
    cols: usize,
}

impl Dense {
    /// `{prefix}.weight` and `{prefix}.bias` of a voice's weights (the
    /// package has checked their shapes against its config).
    pub(crate) fn load(weights: &Weights, prefix: &str) -> Result<Self, SynthError> {
        Self::from_names(weights, &format!("{prefix}.weight"), &format!("{prefix}.bias"))
    }

    fn from_names(weights: &Weights, weight: &str, bias: &str) -> Result<Self, SynthError> {
        let w = tensor(weights, weight)?;
        let cols = w.shape().get(1).copied().unwrap_or(0);
        Ok(Self { w: w.data().to_vec(), b: tensor(weights, bias)?.data().to_vec(), cols })
    }

    /// Output width.
    pub(crate) fn rows(&self) -> usize {
        self.b.len()
    }

    /// `y = W x + b`.
    ///
    /// # Shapes
    /// * `x`: `[cols]`, `y`: `[rows]`
    pub(crate) fn apply(&self, x: &[f64], y: &mut [f64]) {
        for (o, yv) in y.iter_mut().enumerate() {
            *yv = self.b[o] as f64 + dot(&self.w[o * self.cols..(o + 1) * self.cols], x);
        }
    }
}

/// One GRU layer as a one-layer `torch.nn.GRU` stores it: stacked rows
/// `[r; z; n]` in `weight_ih_l0` `[3H, in]`, `weight_hh_l0` `[3H, H]`,
/// `bias_ih_l0` and `bias_hh_l0` `[3H]`.
#[derive(Debug, Clone)]
pub(crate) struct Gru {
    ih: Dense, // [3H, in]
    hh: Dense, // [3H, H]
}

impl Gru {
    /// The layer whose tensors are `{prefix}.weight_ih_l0` and so on.
    pub(crate) fn load(weights: &Weights, prefix: &str) -> Result<Self, SynthError> {
        let name = |n: &str| format!("{prefix}.{n}_l0");
        Ok(Self {
            ih: Dense::from_names(weights, &name("weight_ih"), &name("bias_ih"))?,
            hh: Dense::from_names(weights, &name("weight_hh"), &name("bias_hh"))?,
        })
    }

    /// One step: `h ← GRU(x, h)`, with `gi`, `gh` as scratch (`[3H]` each):
    ///
    /// ```text
    /// r = σ(gi_r + gh_r), z = σ(gi_z + gh_z), n = tanh(gi_n + r ⊙ gh_n)
    /// h' = (1 − z) ⊙ n + z ⊙ h
    /// ```
    ///
    /// # Shapes
    /// * `x`: `[in]`, `h`: `[H]`, `gi`, `gh`: `[3H]`
    pub(crate) fn step(&self, x: &[f64], h: &mut [f64], gi: &mut [f64], gh: &mut [f64]) {
        let hd = h.len();
        self.ih.apply(x, gi);
        self.hh.apply(h, gh);
        for j in 0..hd {
            let r = sigmoid(gi[j] + gh[j]);
            let z = sigmoid(gi[hd + j] + gh[hd + j]);
            let n = (gi[2 * hd + j] + r * gh[2 * hd + j]).tanh();
            h[j] = (1.0 - z) * n + z * h[j];
        }
    }
}

/// `Σ w[k] x[k]` in float64 over eight interleaved partial sums (k mod 8),
/// joined pairwise: independent chains the compiler vectorizes, about 3x
/// faster planning than one chain in k order for the duration model's
/// 256-wide rows (`examples/plan_cost.rs` in dv-serve), and as accurate in
/// float64.
pub(crate) fn dot(w: &[f32], x: &[f64]) -> f64 {
    let n = w.len().min(x.len());
    let (w, x) = (&w[..n], &x[..n]);
    let mut acc = [0.0f64; 8];
    let (wc, xc) = (w.chunks_exact(8), x.chunks_exact(8));
    let (wr, xr) = (wc.remainder(), xc.remainder());
    for (a, b) in wc.zip(xc) {
        for i in 0..8 {
            acc[i] += a[i] as f64 * b[i];
        }
    }
    for (i, (&a, &b)) in wr.iter().zip(xr).enumerate() {
        acc[i] += a as f64 * b;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
}

pub(crate) fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}
