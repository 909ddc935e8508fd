//! The conditioning network (Deep Voice App. A.2, FORMAT.md): bidirectional
//! QRNN layers with fo-pooling and 2×1 convolutions, channel interleaving,
//! and a linear projection to every WaveNet layer's `L_i`.
//!
//! Not a hot path (it runs once per utterance at 256 frames/s), so it is
//! written for accuracy: dot products, gates and the cell state are computed
//! in f64 and rounded to f32 at each layer's output.

use dv_voice::Voice;

use crate::conditioning::Conditioning;
use crate::error::SynthError;

/// One direction of one QRNN layer: `a = w_prev · x(t∓1) + w_cur · x(t) + bias`.
#[derive(Debug, Clone)]
struct Direction {
    w_prev: Vec<f32>, // [3H, D]
    w_cur: Vec<f32>,  // [3H, D]
    bias: Vec<f32>,   // [3H]
}

#[derive(Debug, Clone)]
struct Layer {
    input_dim: usize,
    fwd: Direction,
    bwd: Direction,
}

/// The conditioning network of a voice.
#[derive(Debug, Clone)]
pub struct ConditioningNetwork {
    hidden: usize,
    input_dim: usize,
    layers: Vec<Layer>,
    proj_w: Vec<f32>, // [ℓ·2r, 2H]
    proj_b: Vec<f32>, // [ℓ·2r]
    out_dim: usize,
}

fn take(voice: &Voice, name: &str) -> Result<Vec<f32>, SynthError> {
    Ok(voice.tensor(name)?.data().to_vec())
}

impl ConditioningNetwork {
    /// Copies the `cond.*` weights of `voice`.
    pub fn new(voice: &Voice) -> Result<Self, SynthError> {
        let c = voice.config().conditioning;
        let mut layers = Vec::with_capacity(c.qrnn_layers);
        for k in 0..c.qrnn_layers {
            let dir = |d: &str| -> Result<Direction, SynthError> {
                Ok(Direction {
                    w_prev: take(voice, &format!("cond.qrnn.{k}.{d}.w_prev"))?,
                    w_cur: take(voice, &format!("cond.qrnn.{k}.{d}.w_cur"))?,
                    bias: take(voice, &format!("cond.qrnn.{k}.{d}.bias"))?,
                })
            };
            let input_dim = if k == 0 { c.input_dim } else { 2 * c.hidden };
            layers.push(Layer { input_dim, fwd: dir("fwd")?, bwd: dir("bwd")? });
        }
        Ok(Self {
            hidden: c.hidden,
            input_dim: c.input_dim,
            layers,
            proj_w: take(voice, "cond.proj.weight")?,
            proj_b: take(voice, "cond.proj.bias")?,
            out_dim: voice.config().conditioning_width(),
        })
    }

    /// The conditioning L for `frames` conditioning frames.
    ///
    /// # Shapes
    /// * `features`: `[F, input_dim]` row-major (`dv_text` frames, 227 wide)
    /// * returns `[F, ℓ·2r]`
    ///
    /// Allocates its output and F·2H·2 floats of intermediate state.
    pub fn forward(&self, features: &[f32]) -> Result<Conditioning, SynthError> {
        if !features.len().is_multiple_of(self.input_dim) {
            return Err(SynthError::Shape {
                what: "conditioning features (a multiple of input_dim)",
                expected: features.len().div_ceil(self.input_dim) * self.input_dim,
                got: features.len(),
            });
        }
        if let Some(index) = features.iter().position(|v| !v.is_finite()) {
            return Err(SynthError::NonFinite { what: "conditioning features", index });
        }
        let f = features.len() / self.input_dim;
        let h = self.hidden;
        let mut x = features.to_vec(); // [F, D_k]
        for layer in &self.layers {
            let mut y = vec![0.0f32; f * 2 * h]; // [F, 2H] = [z_fwd; z_bwd]
            run_direction(&layer.fwd, &x, layer.input_dim, h, f, false, &mut y, 0);
            run_direction(&layer.bwd, &x, layer.input_dim, h, f, true, &mut y, h);
            x = y;
        }
        // Interleave: u[2j] = z_fwd[j], u[2j+1] = z_bwd[j].
        let mut u = vec![0.0f64; 2 * h];
        let mut out = vec![0.0f32; f * self.out_dim]; // [F, ℓ·2r]
        for t in 0..f {
            let row = &x[t * 2 * h..(t + 1) * 2 * h];
            for j in 0..h {
                u[2 * j] = row[j] as f64;
                u[2 * j + 1] = row[h + j] as f64;
            }
            for (o, out_v) in out[t * self.out_dim..(t + 1) * self.out_dim].iter_mut().enumerate() {
                let w = &self.proj_w[o * 2 * h..(o + 1) * 2 * h];
                *out_v = (self.proj_b[o] as f64 + dot(w, &u)) as f32;
            }
        }
        Conditioning::new(f, self.out_dim, out)
    }
}

fn dot(w: &[f32], x: &[f64]) -> f64 {
    w.iter().zip(x).map(|(&a, &b)| a as f64 * b).sum()
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// One direction over the sequence, writing `z` into columns
/// `col..col + H` of `y` (`[F, 2H]`).
#[allow(clippy::too_many_arguments)]
fn run_direction(dir: &Direction, x: &[f32], d: usize, h: usize, f: usize, reverse: bool, y: &mut [f32], col: usize) {
    let mut c = vec![0.0f64; h];
    let mut a = vec![0.0f64; 3 * h];
    let zeros = vec![0.0f64; d];
    let mut xt = vec![0.0f64; d];
    let mut xp = zeros.clone();
    for step in 0..f {
        let t = if reverse { f - 1 - step } else { step };
        for (v, &s) in xt.iter_mut().zip(&x[t * d..(t + 1) * d]) {
            *v = s as f64;
        }
        for (o, av) in a.iter_mut().enumerate() {
            *av = dir.bias[o] as f64
                + dot(&dir.w_prev[o * d..(o + 1) * d], &xp)
                + dot(&dir.w_cur[o * d..(o + 1) * d], &xt);
        }
        let row = &mut y[t * 2 * h + col..t * 2 * h + col + h];
        for j in 0..h {
            let cand = a[j].tanh();
            let o = sigmoid(a[h + j]);
            let fg = sigmoid(a[2 * h + j]);
            c[j] = fg * c[j] + (1.0 - fg) * cand;
            row[j] = (o * c[j]) as f32;
        }
        std::mem::swap(&mut xp, &mut xt);
    }
}
