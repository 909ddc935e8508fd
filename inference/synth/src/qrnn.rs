//! The conditioning network (Deep Voice App. A.2, FORMAT.md): bidirectional
//! QRNN layers with fo-pooling and 2×1 convolutions, channel interleaving,
//! and a linear projection to every WaveNet layer's `L_i`.
//!
//! It runs over the whole utterance before the first sample, so it is built
//! around matrix products over all frames at once: a layer's gate
//! pre-activations `w_prev · x(t∓1) + w_cur · x(t)` for every `t` and both
//! directions are one `[F, D] × [D, 12H]` product (the `w_prev` half shifted
//! by one frame afterwards), and the projection one `[F, 2H] × [2H, ℓ·2r]`
//! product whose weight columns are permuted at load time so the
//! interleaving costs nothing. Products run in f32 ([`PackedPanels`], AVX2
//! when the CPU has it); the gates run in f32 (AVX2, a few ulp) or f64, the
//! sequential fo-pooling's cell state in f64.
//!
//! [`ConditioningNetwork::forward_reference`] keeps the direct f64
//! formulation (dot products, gates and the cell state in f64, rounded to f32
//! at each layer's output) as the oracle.

use dv_voice::Voice;

use crate::conditioning::Conditioning;
use crate::error::SynthError;
use crate::nonlinear::Nonlinearity;
use crate::packed::PackedPanels;
use crate::simd::Avx2;

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
    /// Per layer: rows `[fwd.w_cur; fwd.w_prev; bwd.w_cur; bwd.w_prev]`, `[12H, D]`.
    gates: Vec<PackedPanels>,
    /// `proj_w` with columns in `[z_fwd; z_bwd]` order, `[ℓ·2r, 2H]`.
    proj: PackedPanels,
    simd: Option<Avx2>,
}

/// Most threads one product is split over.
const MAX_THREADS: usize = 4;

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
        let h = c.hidden;
        let out_dim = voice.config().conditioning_width();
        let proj_w = take(voice, "cond.proj.weight")?;
        let proj_b = take(voice, "cond.proj.bias")?;
        for (what, expected, got) in
            [("cond.proj.weight", out_dim * 2 * h, proj_w.len()), ("cond.proj.bias", out_dim, proj_b.len())]
                .into_iter()
                .chain(layers.iter().flat_map(|l| {
                    [&l.fwd, &l.bwd].into_iter().flat_map(move |d| {
                        [
                            ("cond.qrnn.*.w_prev", 3 * h * l.input_dim, d.w_prev.len()),
                            ("cond.qrnn.*.w_cur", 3 * h * l.input_dim, d.w_cur.len()),
                            ("cond.qrnn.*.bias", 3 * h, d.bias.len()),
                        ]
                    })
                }))
        {
            if expected != got {
                return Err(SynthError::Shape { what, expected, got });
            }
        }
        let gates = layers
            .iter()
            .map(|l| {
                let stacked: Vec<f32> =
                    [&l.fwd.w_cur, &l.fwd.w_prev, &l.bwd.w_cur, &l.bwd.w_prev].into_iter().flatten().copied().collect();
                PackedPanels::new(&stacked, 12 * h, l.input_dim)
            })
            .collect();
        // u[2j] = z_fwd[j], u[2j + 1] = z_bwd[j]: column j of the permuted
        // weight meets z_fwd[j], column H + j meets z_bwd[j].
        let mut permuted = vec![0.0f32; proj_w.len()]; // [ℓ·2r, 2H]
        for (dst, src) in permuted.chunks_exact_mut(2 * h).zip(proj_w.chunks_exact(2 * h)) {
            for j in 0..h {
                dst[j] = src[2 * j];
                dst[h + j] = src[2 * j + 1];
            }
        }
        let proj = PackedPanels::new(&permuted, out_dim, 2 * h);
        Ok(Self {
            hidden: h,
            input_dim: c.input_dim,
            layers,
            proj_w,
            proj_b,
            out_dim,
            gates,
            proj,
            simd: Avx2::detect(),
        })
    }

    /// The number of frames in `features`, or why they cannot be used.
    fn frames(&self, features: &[f32]) -> Result<usize, SynthError> {
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
        Ok(features.len() / self.input_dim)
    }

    /// `c += a · Wᵀ`, AVX2 where the CPU has it, the frames split over up
    /// to [`MAX_THREADS`] threads (the network runs before sampling starts,
    /// while the cores are otherwise idle).
    ///
    /// # Shapes
    /// `a`: `[M, W.cols]`, `c`: `[M, W.rows]`
    fn matmul_acc(&self, w: &PackedPanels, a: &[f32], c: &mut [f32]) {
        let m = a.len() / w.cols;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS);
        // Whole register tiles of 6 frames per thread, at least 48 frames.
        let per = m.div_ceil(threads).next_multiple_of(6).max(48);
        let run = |a: &[f32], c: &mut [f32]| match self.simd {
            Some(avx) => avx.matmul_acc(w, a, c),
            None => w.matmul_acc_scalar(a, c),
        };
        if per >= m {
            return run(a, c);
        }
        std::thread::scope(|s| {
            let mut parts = a.chunks(per * w.cols).zip(c.chunks_mut(per * w.rows));
            let first = parts.next();
            for (ap, cp) in parts {
                s.spawn(move || run(ap, cp));
            }
            if let Some((ap, cp)) = first {
                run(ap, cp);
            }
        });
    }

    /// The conditioning L for `frames` conditioning frames.
    ///
    /// # Shapes
    /// * `features`: `[F, input_dim]` row-major (`dv_text` frames, 227 wide)
    /// * returns `[F, ℓ·2r]`
    ///
    /// Allocates its output and F·16H floats of intermediate state.
    pub fn forward(&self, features: &[f32]) -> Result<Conditioning, SynthError> {
        let f = self.frames(features)?;
        let h = self.hidden;
        let mut g = vec![0.0f32; f * 12 * h]; // [F, 12H]: per direction [cur; prev] products
        let mut x = vec![0.0f32; f * 2 * h]; // [F, 2H] = [z_fwd; z_bwd]
        let mut y = vec![0.0f32; f * 2 * h];
        let (mut a, mut c) = (vec![0.0f32; 3 * h], vec![0.0f64; h]);
        for (k, (layer, gates)) in self.layers.iter().zip(&self.gates).enumerate() {
            let input = if k == 0 { features } else { &x[..] }; // [F, D_k]
            g.fill(0.0);
            self.matmul_acc(gates, input, &mut g);
            fo_pool(self.simd, &g, &layer.fwd.bias, 0, false, &mut y, 0, &mut a, &mut c);
            fo_pool(self.simd, &g, &layer.bwd.bias, 6 * h, true, &mut y, h, &mut a, &mut c);
            std::mem::swap(&mut x, &mut y);
        }
        let mut out = Vec::with_capacity(f * self.out_dim); // [F, ℓ·2r]
        for _ in 0..f {
            out.extend_from_slice(&self.proj_b);
        }
        let z = if self.layers.is_empty() { features } else { &x[..] };
        self.matmul_acc(&self.proj, z, &mut out);
        Conditioning::new(f, self.out_dim, out)
    }

    /// [`forward`](Self::forward) computed directly in f64 (dot products,
    /// gates, cell state), frame by frame: the oracle of the fast path, 30–45×
    /// slower on 2 cores.
    ///
    /// # Shapes
    /// As [`forward`](Self::forward).
    pub fn forward_reference(&self, features: &[f32]) -> Result<Conditioning, SynthError> {
        let f = self.frames(features)?;
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

/// Fo-pooling of one direction from the all-frames products `g` (`[F, 12H]`,
/// this direction's `w_cur · x(t)` in columns `at .. at + 3H` and `w_prev ·
/// x(t)` in the next 3H), writing `z` into columns `col..col + H` of `y`
/// (`[F, 2H]`). `a` (`[3H]`) and `c` (`[H]`, the cell state, reset here) are
/// scratch. The gates are the AVX2 f32 ones (a few ulp) where `simd` and
/// `H % 8 == 0`, f64 otherwise; the cell state is f64.
#[allow(clippy::too_many_arguments)]
fn fo_pool(
    simd: Option<Avx2>,
    g: &[f32],
    bias: &[f32],
    at: usize,
    reverse: bool,
    y: &mut [f32],
    col: usize,
    a: &mut [f32],
    c: &mut [f64],
) {
    let h = c.len();
    let (w, f) = (12 * h, g.len() / (12 * h));
    let simd = simd.filter(|_| h.is_multiple_of(8));
    c.fill(0.0);
    for step in 0..f {
        let t = if reverse { f - 1 - step } else { step };
        // a = bias + w_cur · x(t) + w_prev · x(t∓1), the neighbour zero at
        // the sequence's start.
        let cur = &g[t * w + at..t * w + at + 3 * h];
        for ((av, &b), &x) in a.iter_mut().zip(bias).zip(cur) {
            *av = b + x;
        }
        let prev = if step == 0 {
            None
        } else if reverse {
            Some(t + 1)
        } else {
            Some(t - 1)
        };
        if let Some(tp) = prev {
            for (av, &p) in a.iter_mut().zip(&g[tp * w + at + 3 * h..tp * w + at + 6 * h]) {
                *av += p;
            }
        }
        let row = &mut y[t * 2 * h + col..t * 2 * h + col + h];
        match simd {
            Some(avx) => {
                avx.qrnn_gates(a, Nonlinearity::Exact);
                for j in 0..h {
                    let (cand, o, fg) = (a[j] as f64, a[h + j] as f64, a[2 * h + j] as f64);
                    c[j] = fg * c[j] + (1.0 - fg) * cand;
                    row[j] = (o * c[j]) as f32;
                }
            }
            None => {
                for j in 0..h {
                    let cand = (a[j] as f64).tanh();
                    let o = sigmoid(a[h + j] as f64);
                    let fg = sigmoid(a[2 * h + j] as f64);
                    c[j] = fg * c[j] + (1.0 - fg) * cand;
                    row[j] = (o * c[j]) as f32;
                }
            }
        }
    }
}
