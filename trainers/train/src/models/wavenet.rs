//! The audio synthesis model of Deep Voice §3.4 and App. A: an
//! autoregressive WaveNet over 8-bit mu-law samples, conditioned through two
//! bidirectional QRNN layers on the 227-dim phoneme/F0 frames at 256 Hz.
//!
//! The parameter names, shapes and the exact step equations are those of
//! the voice package (`inference/voice/FORMAT.md`), so export writes the
//! var store as it is and the libtorch-free sampler reads it unchanged.
//!
//! # Training form (teacher forcing)
//!
//! For a window of N samples y(0 … N−1) the network outputs, at every
//! position t, the distribution of y(t) given y(t−1), y(t−2) (code 128,
//! silence, before the window) and the layers' inputs at t and t − d
//! (zero before the window: the causal convolution's left padding). The
//! 2×1 input convolution is two embeddings (App. A.1); each dilated layer is
//! one convolution with r inputs and 2r outputs whose taps are `w_prev` and
//! `w_cur`. The conditioning `L` is computed once per 256 Hz frame and added
//! to every `hop` (64) samples by broadcasting, which is upsampling by
//! repetition without materialising it.
//!
//! # Dilations
//!
//! Layer i has dilation `2^(i mod dilation_cycle)`; the presets use cycles of
//! 10 (1, 2, …, 512), so ℓ = 20 is two cycles and ℓ = 40 four, as WaveNet
//! does. Receptive field: `2 + Σ d_i` samples (4094 for ℓ = 40), just under
//! the 0.25 s (4096 samples) of context each training chunk carries.

//!
//! # Fused training step
//!
//! Training (`fused = true`, the default) runs the gated layer stack by
//! hand: rows are samples "time-major, batch inner" (`t · batch + b`), so
//! `x(t − d)` is the same matrix `d · batch` rows earlier and each dilated
//! convolution is two matrix products with no padding or concatenation;
//! the gate and its conditioning are one fused pass forward and one
//! backward ([`super::gate`]: CUDA kernels on a GPU, libtorch operations
//! elsewhere); the backward of the stack is written out (matrix products
//! through libtorch). The conditioning network, the embeddings and the
//! output layers stay on autograd: the stack's gradients reach them, and
//! the stack's own weights, through a surrogate term whose gradient is
//! exactly the hand-computed one (`loss + S − S.detach()`). The same math
//! as [`Wavenet::logits`]; the tests compare losses and every gradient.

use dv_torch::tch;
use dv_torch::tch::{nn, Kind, Reduction, Tensor};

use super::gate::Gate;
use super::model::{sorted_parameters, Batch, Model};
use super::qrnn::{interleave, BiQrnn};
use crate::TrainError;

/// The mu-law code of silence, the input before the first sample.
pub const SILENCE_CODE: i64 = 128;

// Defined in dv-config with the run config, which parses them without libtorch:
// the voice package's `wavenet` and `conditioning` sections plus bf16 and fused.
pub use dv_config::WavenetConfig;

struct Layer {
    w_prev: Tensor,
    w_cur: Tensor,
    bias: Tensor,
    /// Absent on the last layer, whose residual output nothing reads.
    residual: Option<(Tensor, Tensor)>,
}

/// The WaveNet and its conditioning network, one var store.
pub struct Wavenet {
    pub config: WavenetConfig,
    vs: nn::VarStore,
    qrnn: Vec<BiQrnn>,
    proj_w: Tensor,
    proj_b: Tensor,
    embed_cur: Tensor,
    embed_prev: Tensor,
    embed_bias: Tensor,
    layers: Vec<Layer>,
    skip_w: Tensor,
    skip_b: Tensor,
    relu_w: Tensor,
    relu_b: Tensor,
    out_w: Tensor,
    out_b: Tensor,
    /// The fused step's gate (`Gate::Reference` when `fused` is off).
    gate: Gate,
}

/// What the fused forward keeps for its backward (compute kind).
struct Saved {
    /// All layers' `L`, `[F · b, ℓ · 2r]`.
    cl: Tensor,
    /// Each layer's input `x_i`, `[N · b, r]`.
    x: Vec<Tensor>,
    /// Each layer's gate pre-activation before `L` and bias, `[N · b, 2r]`.
    p: Vec<Tensor>,
    /// All layers' gate outputs, `[N · b, ℓ · r]` (layer-major columns, as `W_skip` reads).
    h: Tensor,
}

fn uniform(fan_in: i64) -> nn::Init {
    let bound = 1.0 / (fan_in as f64).sqrt();
    nn::Init::Uniform { lo: -bound, up: bound }
}

impl Wavenet {
    pub fn new(config: &WavenetConfig, device: tch::Device) -> Result<Wavenet, TrainError> {
        config.check()?;
        let c = config.clone();
        let (l, r, s, a) = (
            c.wavenet.layers as i64,
            c.wavenet.residual_channels as i64,
            c.wavenet.skip_channels as i64,
            c.quantization_channels as i64,
        );
        let (input, hidden) = (c.conditioning.input_dim as i64, c.conditioning.hidden as i64);
        let vs = nn::VarStore::new(device);
        let root = vs.root();
        let cond = &root / "cond";
        let qrnn = (0..c.conditioning.qrnn_layers)
            .map(|k| BiQrnn::new(&cond / "qrnn" / k, if k == 0 { input } else { 2 * hidden }, hidden))
            .collect();
        let proj = &cond / "proj";
        let proj_w = proj.var("weight", &[l * 2 * r, 2 * hidden], uniform(2 * hidden));
        let proj_b = proj.var("bias", &[l * 2 * r], nn::Init::Const(0.0));
        let w = &root / "wavenet";
        let embed = nn::Init::Randn { mean: 0.0, stdev: 1.0 / (2.0f64).sqrt() };
        let embed_cur = w.var("embed_cur", &[a, r], embed);
        let embed_prev = w.var("embed_prev", &[a, r], embed);
        let embed_bias = w.var("embed_bias", &[r], nn::Init::Const(0.0));
        let layers = (0..l)
            .map(|i| {
                let p = &w / "layers" / i;
                Layer {
                    w_prev: p.var("w_prev", &[2 * r, r], uniform(2 * r)),
                    w_cur: p.var("w_cur", &[2 * r, r], uniform(2 * r)),
                    bias: p.var("bias", &[2 * r], nn::Init::Const(0.0)),
                    residual: (i + 1 < l)
                        .then(|| (p.var("w_res", &[r, r], uniform(r)), p.var("b_res", &[r], nn::Init::Const(0.0)))),
                }
            })
            .collect();
        let skip_w = (&w / "skip").var("weight", &[s, l * r], uniform(l * r));
        let skip_b = (&w / "skip").var("bias", &[s], nn::Init::Const(0.0));
        let relu_w = (&w / "relu").var("weight", &[a, s], uniform(s));
        let relu_b = (&w / "relu").var("bias", &[a], nn::Init::Const(0.0));
        let out_w = (&w / "out").var("weight", &[a, a], uniform(a));
        let out_b = (&w / "out").var("bias", &[a], nn::Init::Const(0.0));
        let gate = if c.fused {
            Gate::for_device(device, r, c.hop as i64, if c.bf16 { Kind::BFloat16 } else { Kind::Float })?
        } else {
            Gate::Reference
        };
        Ok(Wavenet {
            config: c,
            vs,
            qrnn,
            proj_w,
            proj_b,
            embed_cur,
            embed_prev,
            embed_bias,
            layers,
            skip_w,
            skip_b,
            relu_w,
            relu_b,
            out_w,
            out_b,
            gate,
        })
    }

    pub fn var_store(&self) -> &nn::VarStore {
        &self.vs
    }

    /// ℓ, r and the hop, as libtorch's sizes.
    fn sizes(&self) -> (i64, i64, i64) {
        let c = &self.config;
        (c.wavenet.layers as i64, c.wavenet.residual_channels as i64, c.hop as i64)
    }

    /// The dilation of layer `i`, at most `n` (a window of `n` samples).
    fn dilation(&self, i: usize, n: i64) -> i64 {
        (self.config.wavenet.dilation(i) as i64).min(n)
    }

    fn compute(&self, t: &Tensor) -> Result<Tensor, TrainError> {
        Ok(if self.config.bf16 { t.f_to_kind(Kind::BFloat16)? } else { t.shallow_clone() })
    }

    /// The per-layer conditioning `L` at the frame rate (App. A.2): two
    /// bidirectional QRNNs, channels interleaved, one projection.
    ///
    /// # Shapes
    /// `frames`: `[b, F, 227]` → `[b, F, ℓ·2r]` (float32).
    pub fn conditioning(&self, frames: &Tensor) -> Result<Tensor, TrainError> {
        let mut x = frames.shallow_clone();
        let last = self.qrnn.len() - 1;
        for (k, layer) in self.qrnn.iter().enumerate() {
            let (f, b) = layer.directions(&x)?; // [b, F, H] each
            x = if k == last { interleave(&f, &b)? } else { Tensor::f_cat(&[f, b], 2)? };
            // [b, F, 2H]
        }
        Ok(x.f_matmul(&self.proj_w.f_tr()?)?.f_add(&self.proj_b)?)
    }

    /// Checks that `frames` `[b, F, 227]` belong to `samples` `[b, F · hop]`.
    fn check_input(&self, frames: &Tensor, samples: &Tensor) -> Result<(i64, i64, i64), TrainError> {
        let (_, _, hop) = self.sizes();
        let (b, n) = (samples.size()[0], samples.size()[1]);
        let f = frames.size()[1];
        if frames.size()[0] != b || f * hop != n {
            return Err(TrainError::Shape {
                what: "wavenet input",
                expected: format!(
                    "[{b}, {}, {}] frames for [{b}, {n}] samples",
                    n / hop,
                    self.config.conditioning.input_dim
                ),
                got: format!("{:?}", frames.size()),
            });
        }
        Ok((b, n, f))
    }

    /// The input layer (App. A.1's 2×1 convolution as two embeddings):
    /// `E_cur[y(t−1)] + E_prev[y(t−2)] + bias`, code 128 before the window.
    ///
    /// # Shapes
    /// `samples` `[b, N]` int64 → `[b, N, r]`, or `[N, b, r]` when
    /// `time_major` (float32).
    fn embedded(&self, samples: &Tensor, time_major: bool) -> Result<Tensor, TrainError> {
        let (b, n) = (samples.size()[0], samples.size()[1]);
        let silence = Tensor::f_full([b, 2], SILENCE_CODE, (Kind::Int64, samples.device()))?;
        let padded = Tensor::f_cat(&[&silence, samples], 1)?; // [b, 2 + N]
        let (mut cur, mut prev) = (padded.f_narrow(1, 1, n)?, padded.f_narrow(1, 0, n)?); // y(t−1), y(t−2)
        if time_major {
            (cur, prev) = (cur.f_tr()?, prev.f_tr()?); // [N, b]
        }
        Ok(Tensor::f_embedding(&self.embed_cur, &cur, -1, false, false)?
            .f_add(&Tensor::f_embedding(&self.embed_prev, &prev, -1, false, false)?)?
            .f_add(&self.embed_bias)?)
    }

    /// The output layers: skip projection of all layers' gate outputs, relu,
    /// relu 1×1, output 1×1 (App. A.1).
    ///
    /// # Shapes
    /// `h` `[…, ℓ·r]` (layer-major) → logits `[…, a]` float32.
    fn head(&self, h: &Tensor) -> Result<Tensor, TrainError> {
        let mut dims = h.size();
        let rows = h.f_reshape([-1, *dims.last().unwrap_or(&1)])?; // [rows, ℓ·r]
                                                                   // Biases ride in the matrix products' epilogues (cuBLASLt on a GPU; `_addmm_activation`
                                                                   // would take the relu too, but libtorch has no derivative for it).
        let zs = self.compute(&self.skip_b)?.f_addmm(&rows, &self.compute(&self.skip_w.f_tr()?)?)?.f_relu()?; // [rows, s]
        let za = self.compute(&self.relu_b)?.f_addmm(&zs, &self.compute(&self.relu_w.f_tr()?)?)?.f_relu()?; // [rows, a]
        let logits = self.compute(&self.out_b)?.f_addmm(&za, &self.compute(&self.out_w.f_tr()?)?)?; // [rows, a]
        if let Some(last) = dims.last_mut() {
            *last = logits.size()[1];
        }
        Ok(logits.f_view(dims.as_slice())?.f_to_kind(Kind::Float)?)
    }

    /// Teacher-forced logits (module docs), time-major: every layer is a
    /// matrix product over `[b, N, channels]` (faster on GPUs than the
    /// equivalent channels-first convolutions, measured in
    /// `benchmarks/wavenet.md`). Autograd throughout: the reference of the
    /// fused training step, and what export's golden outputs come from.
    ///
    /// # Shapes
    /// * `frames`: `[b, F, 227]`, `samples`: `[b, N]` int64 codes with
    ///   `N = F · hop`
    /// * returns `[b, N, a]` float32: row t is the logits of y(t).
    pub fn logits(&self, frames: &Tensor, samples: &Tensor) -> Result<Tensor, TrainError> {
        let (b, n, f) = self.check_input(frames, samples)?;
        let (_, r, hop) = self.sizes();
        let cond = self.compute(&self.conditioning(frames)?)?; // [b, F, ℓ·2r]
        let mut x = self.compute(&self.embedded(samples, false)?)?; // [b, N, r]
        let mut hs = Vec::with_capacity(self.layers.len());
        for (i, layer) in self.layers.iter().enumerate() {
            let d = self.dilation(i, n);
            let past = x.f_constant_pad_nd([0, 0, d, 0])?.f_narrow(1, 0, n)?; // [b, N, r]: x(t − d), 0 before 0
            let w = self.compute(&Tensor::f_cat(&[&layer.w_prev, &layer.w_cur], 1)?)?; // [2r, 2r]
            let hp = Tensor::f_cat(&[&past, &x], 2)?.f_matmul(&w.f_tr()?)?.f_add(&self.compute(&layer.bias)?)?; // [b, N, 2r]
            let l_i = cond.f_narrow(2, i as i64 * 2 * r, 2 * r)?.f_unsqueeze(2)?; // [b, F, 1, 2r]
            let hp = hp.f_view([b, f, hop, 2 * r])?.f_add(&l_i)?.f_view([b, n, 2 * r])?; // + L by repetition
            let h = hp.f_narrow(2, 0, r)?.f_tanh()?.f_mul(&hp.f_narrow(2, r, r)?.f_sigmoid()?)?; // [b, N, r]
            if let Some((w_res, b_res)) = &layer.residual {
                let res = h.f_matmul(&self.compute(&w_res.f_tr()?)?)?.f_add(&self.compute(b_res)?)?;
                x = x.f_add(&res)?; // [b, N, r]
            }
            hs.push(h);
        }
        self.head(&Tensor::f_cat(&hs, 2)?) // [b, N, ℓ·r] → [b, N, a]
    }

    /// Per-example mean cross-entropy over positions `[start, end)`.
    ///
    /// # Shapes
    /// `logits` `[b, N, a]`, `samples` `[b, N]` → `[b]`.
    pub fn chunk_losses(logits: &Tensor, samples: &Tensor, start: &[i64], end: &[i64]) -> Result<Tensor, TrainError> {
        let (b, n, a) = (logits.size()[0], logits.size()[1], logits.size()[2]);
        let ce = logits
            .f_reshape([b * n, a])?
            .f_cross_entropy_loss::<Tensor>(&samples.f_reshape([b * n])?, None, Reduction::None, -100, 0.0)?
            .f_view([b, n])?; // [b, N]
        masked_means(&ce, start, end)
    }

    /// The layer stack's weights in one flat float32 vector (autograd: its
    /// gradient reaches every weight) in the order of [`Wavenet::layer_views`].
    fn stack_flat(&self) -> Result<Tensor, TrainError> {
        let mut parts = Vec::with_capacity(5 * self.layers.len());
        for layer in &self.layers {
            parts.extend([&layer.w_prev, &layer.w_cur, &layer.bias]);
            if let Some((w_res, b_res)) = &layer.residual {
                parts.extend([w_res, b_res]);
            }
        }
        let flat: Vec<Tensor> = parts.iter().map(|p| p.f_reshape([-1])).collect::<Result<_, _>>()?;
        Ok(Tensor::f_cat(&flat, 0)?)
    }

    /// Each layer's weights as views of `flat` (laid out by [`Wavenet::stack_flat`]).
    fn layer_views(&self, flat: &Tensor) -> Result<Vec<Layer>, TrainError> {
        let mut at = 0;
        let mut take = |like: &Tensor| -> Result<Tensor, TrainError> {
            let n = like.numel() as i64;
            let v = flat.f_narrow(0, at, n)?.f_view(like.size().as_slice())?;
            at += n;
            Ok(v)
        };
        let mut views = Vec::with_capacity(self.layers.len());
        for layer in &self.layers {
            let (w_prev, w_cur, bias) = (take(&layer.w_prev)?, take(&layer.w_cur)?, take(&layer.bias)?);
            let residual = match &layer.residual {
                Some((w_res, b_res)) => Some((take(w_res)?, take(b_res)?)),
                None => None,
            };
            views.push(Layer { w_prev, w_cur, bias, residual });
        }
        Ok(views)
    }

    /// The fused forward of the layer stack (module docs), without autograd;
    /// `w` the stack's weights in the compute kind.
    ///
    /// # Shapes
    /// `cond` `[b, F, ℓ·2r]`, `x0` `[N, b, r]` (time-major) → [`Saved`] with
    /// `h` `[N · b, ℓ·r]`.
    fn stack_forward(
        &self,
        w: &[Layer],
        cond: &Tensor,
        x0: &Tensor,
        (b, n, f): (i64, i64, i64),
    ) -> Result<Saved, TrainError> {
        let (l, r, hop) = self.sizes();
        let rows = n * b;
        let shape = dv_fused::GateShape { r, batch: b, hop, frames: f };
        let cl = self.compute(&cond.f_transpose(0, 1)?.f_contiguous()?.f_view([f * b, l * 2 * r])?)?; // [F·b, ℓ·2r]
        let mut x = self.compute(&x0.f_reshape([rows, r])?)?; // [N·b, r]
        let h = Tensor::f_empty([rows, l * r], (x.kind(), x.device()))?;
        let (mut xs, mut ps) = (Vec::with_capacity(l as usize), Vec::with_capacity(l as usize));
        for (i, layer) in w.iter().enumerate() {
            let d = self.dilation(i, n);
            let p = x.f_matmul(&layer.w_cur.f_tr()?)?; // [N·b, 2r]: x(t) W_cur
            if d < n {
                let past = x.f_narrow(0, 0, (n - d) * b)?; // x(t − d) for t ≥ d
                let _ = p.f_narrow(0, d * b, (n - d) * b)?.f_addmm_(&past, &layer.w_prev.f_tr()?)?;
            }
            let z = h.f_narrow(1, i as i64 * r, r)?; // [N·b, r] columns of h
            self.gate.forward(shape, &p, &cl.f_narrow(1, i as i64 * 2 * r, 2 * r)?, &layer.bias, &z)?;
            let next = match &layer.residual {
                Some((w_res, b_res)) => {
                    // z W_resᵀ with the bias in the product's epilogue, then + x in place
                    let mut res = b_res.f_addmm(&z, &w_res.f_tr()?)?;
                    let _ = res.f_add_(&x)?;
                    Some(res)
                }
                None => None,
            };
            xs.push(x);
            ps.push(p);
            if let Some(nx) = next {
                x = nx;
            } else {
                break;
            }
        }
        Ok(Saved { cl, x: xs, p: ps, h })
    }

    /// The hand-written backward of [`Wavenet::stack_forward`] from the
    /// gradient of `h`: writes each weight's gradient into `gw` (views of one
    /// zeroed buffer in the compute kind, laid out as `w`) and returns the
    /// gradients of `cond` (`[b, F, ℓ·2r]`) and of `x0` (`[N, b, r]`), both
    /// float32.
    fn stack_backward(
        &self,
        w: &[Layer],
        gw: &[Layer],
        saved: &Saved,
        g_h: &Tensor,
        (b, n, f): (i64, i64, i64),
    ) -> Result<(Tensor, Tensor), TrainError> {
        let (l, r, hop) = self.sizes();
        let rows = n * b;
        let shape = dv_fused::GateShape { r, batch: b, hop, frames: f };
        let g_cl = Tensor::f_empty([f * b, l * 2 * r], (Kind::Float, g_h.device()))?;
        // The gradient of the next layer's input x_{i+1} (none after the last layer).
        let mut g_x: Option<Tensor> = None;
        for (i, (layer, gl)) in w.iter().zip(gw).enumerate().rev() {
            let (d, x) = (self.dilation(i, n), &saved.x[i]);
            let mut g_z = g_h.f_narrow(1, i as i64 * r, r)?; // [N·b, r]: from the skip path
            let z = saved.h.f_narrow(1, i as i64 * r, r)?;
            if let (Some(gx), Some((w_res, _)), Some((g_w_res, g_b_res))) = (&g_x, &layer.residual, &gl.residual) {
                // x_{i+1} = x_i + z W_resᵀ + b_res
                let _ = g_z.f_addmm_(gx, w_res)?;
                let _ = gx.f_tr()?.f_mm_out(g_w_res, &z)?;
                let _ = gx.f_sum_intlist_out(g_b_res, 0, false, g_b_res.kind())?;
            }
            let g_p = Tensor::f_empty([rows, 2 * r], (g_h.kind(), g_h.device()))?;
            let g_l = g_cl.f_narrow(1, i as i64 * 2 * r, 2 * r)?;
            let l_i = saved.cl.f_narrow(1, i as i64 * 2 * r, 2 * r)?;
            self.gate.backward(shape, &saved.p[i], &l_i, &layer.bias, &g_z, &g_p, &g_l)?;
            let _ = g_l.f_sum_intlist_out(&gl.bias, 0, false, gl.bias.kind())?;
            let _ = g_p.f_tr()?.f_mm_out(&gl.w_cur, x)?;
            let gx = match g_x.take() {
                Some(mut gx) => {
                    let _ = gx.f_addmm_(&g_p, &layer.w_cur)?; // the residual path's identity plus x_i W_cur
                    gx
                }
                None => g_p.f_mm(&layer.w_cur)?,
            };
            if d < n {
                // (with d = N the whole window is zero padding: w_prev's gradient stays 0)
                let g_past = g_p.f_narrow(0, d * b, (n - d) * b)?;
                let past = x.f_narrow(0, 0, (n - d) * b)?;
                let _ = g_past.f_tr()?.f_mm_out(&gl.w_prev, &past)?;
                let _ = gx.f_narrow(0, 0, (n - d) * b)?.f_addmm_(&g_past, &layer.w_prev)?;
            }
            g_x = Some(gx);
        }
        let g_cond = g_cl.f_view([f, b, l * 2 * r])?.f_transpose(0, 1)?; // [b, F, ℓ·2r]
        let g_x0 = match g_x {
            Some(gx) => gx.f_view([n, b, r])?.f_to_kind(Kind::Float)?,
            None => Tensor::f_zeros([n, b, r], (Kind::Float, g_h.device()))?,
        };
        Ok((g_cond, g_x0))
    }

    /// [`Model::loss_sum`] through the fused step (module docs).
    fn fused_loss_sum(&self, batch: &Batch, train: bool) -> Result<Tensor, TrainError> {
        let (frames, samples) = (&batch.inputs, &batch.targets);
        let dims = self.check_input(frames, samples)?;
        let (b, n, _) = dims;
        let mut prof = StepProfile::start(samples.device());
        let cond = self.conditioning(frames)?; // [b, F, ℓ·2r] float32, autograd
        let x0 = self.embedded(samples, true)?; // [N, b, r] float32, autograd
                                                // The stack's weights: one flat vector, cast to the compute kind once per step.
        let flat = self.stack_flat()?;
        let flat_c = self.compute(&flat.f_detach()?)?;
        let w = self.layer_views(&flat_c)?;
        prof.mark(0);
        let saved = tch::no_grad(|| self.stack_forward(&w, &cond, &x0, dims))?;
        prof.mark(1);
        let h = saved.h.detach().f_set_requires_grad(train)?; // the head's input, a leaf
        let targets = samples.f_tr()?.f_contiguous()?.f_view([n * b])?; // time-major
        let ce = self
            .head(&h)?
            .f_cross_entropy_loss::<Tensor>(&targets, None, Reduction::None, -100, 0.0)?
            .f_view([n, b])?
            .f_tr()?; // [b, N]
        let loss = masked_means(&ce, &batch.target_lengths, &batch.input_lengths)?.f_sum(Kind::Float)?;
        prof.mark(2);
        if !train || !loss.requires_grad() {
            return Ok(loss);
        }
        let head: Vec<&Tensor> = vec![&self.skip_w, &self.skip_b, &self.relu_w, &self.relu_b, &self.out_w, &self.out_b];
        let mut inputs = vec![&h];
        inputs.extend(&head);
        let g = Tensor::f_run_backward(&[&loss], &inputs, false, false)?;
        prof.mark(3);
        let g_flat = flat_c.f_zeros_like()?;
        let gw = self.layer_views(&g_flat)?;
        let (g_cond, g_x0) = tch::no_grad(|| self.stack_backward(&w, &gw, &saved, &g[0], dims))?;
        prof.mark(4);
        // S: its gradient with respect to every weight, `cond` and `x0` is the one computed above.
        let mut s = flat.f_dot(&g_flat.f_to_kind(Kind::Float)?)?;
        for (p, gp) in head.iter().zip(&g[1..]) {
            s = s.f_add(&p.f_mul(gp)?.f_sum(Kind::Float)?)?;
        }
        let s = s.f_add(&cond.f_mul(&g_cond)?.f_sum(Kind::Float)?)?.f_add(&x0.f_mul(&g_x0)?.f_sum(Kind::Float)?)?;
        let out = loss.f_detach()?.f_add(&s)?.f_sub(&s.f_detach()?)?;
        prof.mark(5);
        prof.finish();
        Ok(out)
    }
}

/// Wall time of the fused step's parts, when `DV_WAVENET_PROFILE` is set:
/// the device is synchronised at each boundary and the means over 20 steps
/// go to stderr (`[train] profile` times the trainer's phases around it).
struct StepProfile {
    device: Option<tch::Device>,
    last: std::time::Instant,
    ms: [f64; 6],
}

const STEP_PARTS: [&str; 6] = ["cond+embed", "stack fwd", "head+loss", "head bwd", "stack bwd", "surrogate"];
static STEP_TOTALS: std::sync::Mutex<([f64; 6], u32)> = std::sync::Mutex::new(([0.0; 6], 0));

impl StepProfile {
    fn start(device: tch::Device) -> StepProfile {
        let on = std::env::var_os("DV_WAVENET_PROFILE").is_some();
        let mut p = StepProfile { device: on.then_some(device), last: std::time::Instant::now(), ms: [0.0; 6] };
        p.sync();
        p.last = std::time::Instant::now();
        p
    }

    fn sync(&self) {
        if let Some(tch::Device::Cuda(i)) = self.device {
            tch::Cuda::synchronize(i as i64);
        }
    }

    fn mark(&mut self, part: usize) {
        if self.device.is_none() {
            return;
        }
        self.sync();
        let now = std::time::Instant::now();
        self.ms[part] += (now - self.last).as_secs_f64() * 1e3;
        self.last = now;
    }

    fn finish(&self) {
        if self.device.is_none() {
            return;
        }
        let Ok(mut t) = STEP_TOTALS.lock() else { return };
        for (a, v) in t.0.iter_mut().zip(self.ms) {
            *a += v;
        }
        t.1 += 1;
        if t.1 == 20 {
            let parts: Vec<String> = STEP_PARTS.iter().zip(t.0).map(|(n, v)| format!("{n} {:.2}", v / 20.0)).collect();
            eprintln!("fused step [{} ms]", parts.join(", "));
            *t = ([0.0; 6], 0);
        }
    }
}

/// Per-example mean of `ce` over positions `[start, end)`.
///
/// # Shapes
/// `ce` `[b, N]` → `[b]`.
fn masked_means(ce: &Tensor, start: &[i64], end: &[i64]) -> Result<Tensor, TrainError> {
    let n = ce.size()[1];
    let device = ce.device();
    let steps = Tensor::f_arange(n, (Kind::Int64, device))?.f_view([1, n])?;
    let lo = Tensor::from_slice(start).f_to_device(device)?.f_view([-1, 1])?;
    let hi = Tensor::from_slice(end).f_to_device(device)?.f_view([-1, 1])?;
    let mask = steps.f_ge_tensor(&lo)?.f_logical_and(&steps.f_lt_tensor(&hi)?)?.f_to_kind(Kind::Float)?; // [b, N]
    let count = mask.f_sum_dim_intlist(1, false, Kind::Float)?.f_clamp_min(1.0)?;
    Ok(ce.f_mul(&mask)?.f_sum_dim_intlist(1, false, Kind::Float)?.f_div(&count)?)
}

impl Model for Wavenet {
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        sorted_parameters(&self.vs)
    }

    /// A [`Batch`] of chunks: `inputs` the conditioning frames `[b, F, 227]`,
    /// `targets` the window's codes `[b, N]` int64, `target_lengths` where
    /// each example's loss starts (its context) and `input_lengths` where
    /// it ends (context plus real target samples). Each example's loss is
    /// its mean cross-entropy over that span.
    fn loss_sum(&self, batch: &Batch, train: bool, _seed: u64) -> Result<Tensor, TrainError> {
        if self.config.fused {
            return self.fused_loss_sum(batch, train);
        }
        let logits = self.logits(&batch.inputs, &batch.targets)?;
        let losses = Wavenet::chunk_losses(&logits, &batch.targets, &batch.target_lengths, &batch.input_lengths)?;
        Ok(losses.f_sum(Kind::Float)?)
    }
}
