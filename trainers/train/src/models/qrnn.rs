//! Quasi-recurrent layers with fo-pooling and 2×1 convolutions (Bradbury
//! et al. 2016), the conditioning network of Deep Voice App. A.2, eqs.
//! 20–24:
//!
//! ```text
//! a(t) = W_prev · x(t−1) + W_cur · x(t) + B          (the 2×1 convolution; x(−1) = 0)
//! h̃ = tanh(a[0:H])   o = σ(a[H:2H])   f = σ(a[2H:3H])
//! c(t) = f(t) ⊙ c(t−1) + (1 − f(t)) ⊙ h̃(t)            (c(−1) = 0)
//! z(t) = o(t) ⊙ c(t)
//! ```
//!
//! The backward direction runs the same on the time-reversed sequence.
//!
//! # Why a blocked scan
//!
//! The recurrence is linear in `c`, so `c(t) = Σ_{k≤t} (Π_{j=k+1..t} f_j) g_k`
//! with `g = (1 − f) ⊙ h̃`. Within a block of [`SCAN_BLOCK`] frames this is one
//! batched product with weights `exp(F_t − F_k)` (`F` the running sum of
//! `log f`, differences taken before exponentiating, so every weight is in
//! `[0, 1]` and nothing overflows); blocks are chained by the same scan one
//! level up (the state entering block n is a weighted sum of the earlier
//! blocks' end states, weights `exp(S_{n−1} − S_m)`). No step is sequential,
//! which matters on a GPU where each one is a few kernel launches (the
//! chaining was a loop of 10 steps per 320 frames before, forward and
//! backward).
//! [`fo_pool_loop`] is the step-by-step recurrence, kept as the oracle.

use dv_torch::tch::{nn, Kind, Tensor};

use crate::TrainError;

/// Frames per block of the parallel fo-pooling scan.
pub const SCAN_BLOCK: i64 = 32;

/// One direction of a QRNN layer.
pub struct QrnnDirection {
    /// `[3H, D]`
    pub w_prev: Tensor,
    /// `[3H, D]`
    pub w_cur: Tensor,
    /// `[3H]`
    pub bias: Tensor,
    pub hidden: i64,
}

impl QrnnDirection {
    /// Parameters `w_prev`, `w_cur`, `bias` under `p`, uniform in
    /// ±1/√(2D) (the fan-in of the 2×1 convolution), biases zero.
    pub fn new(p: nn::Path<'_>, input: i64, hidden: i64) -> QrnnDirection {
        let bound = 1.0 / ((2 * input) as f64).sqrt();
        QrnnDirection {
            w_prev: p.var("w_prev", &[3 * hidden, input], nn::Init::Uniform { lo: -bound, up: bound }),
            w_cur: p.var("w_cur", &[3 * hidden, input], nn::Init::Uniform { lo: -bound, up: bound }),
            bias: p.var("bias", &[3 * hidden], nn::Init::Const(0.0)),
            hidden,
        }
    }

    /// The gates of eqs. 20–22: candidate `h̃`, output gate `o` and `log f`.
    ///
    /// # Shapes
    /// `x`: `[b, t, D]` → three `[b, t, H]`.
    pub fn gates(&self, x: &Tensor) -> Result<(Tensor, Tensor, Tensor), TrainError> {
        let t = x.size()[1];
        let prev = x.f_constant_pad_nd([0, 0, 1, 0])?.f_narrow(1, 0, t)?; // [b, t, D]: x(t−1), zero at t = 0
        let a = prev.f_matmul(&self.w_prev.f_tr()?)?.f_add(&x.f_matmul(&self.w_cur.f_tr()?)?)?.f_add(&self.bias)?; // [b, t, 3H]
        let h = self.hidden;
        let cand = a.f_narrow(2, 0, h)?.f_tanh()?;
        let out = a.f_narrow(2, h, h)?.f_sigmoid()?;
        let log_f = a.f_narrow(2, 2 * h, h)?.f_log_sigmoid()?;
        Ok((cand, out, log_f))
    }

    /// `z` of eq. 24 by the blocked scan.
    ///
    /// # Shapes
    /// `x`: `[b, t, D]` → `[b, t, H]`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, TrainError> {
        let (cand, out, log_f) = self.gates(x)?;
        Ok(out.f_mul(&fo_pool(&cand, &log_f)?)?)
    }
}

/// The fo-pooling state `c` of eq. 23 by the blocked scan (module docs).
///
/// # Shapes
/// `cand`, `log_f`: `[b, t, H]` → `[b, t, H]`.
pub fn fo_pool(cand: &Tensor, log_f: &Tensor) -> Result<Tensor, TrainError> {
    let (b, t, h) = (cand.size()[0], cand.size()[1], cand.size()[2]);
    let block = SCAN_BLOCK.min(t.max(1));
    let blocks = (t + block - 1) / block;
    let pad = blocks * block - t;
    // g = (1 − f) h̃; padding frames get g = 0 and log f = 0 (f = 1) and are cut off below.
    let g = Tensor::f_ones_like(log_f)?.f_sub(&log_f.f_exp()?)?.f_mul(cand)?;
    let g = g.f_constant_pad_nd([0, 0, 0, pad])?.f_view([b, blocks, block, h])?; // [b, n, B, H]
    let lf = log_f.f_constant_pad_nd([0, 0, 0, pad])?.f_view([b, blocks, block, h])?;
    let cum = lf.f_cumsum(2, Kind::Float)?; // [b, n, B, H]: F_t within the block
    let diff = cum.f_unsqueeze(3)?.f_sub(&cum.f_unsqueeze(2)?)?; // [b, n, B(t), B(k), H]: F_t − F_k
    let causal =
        Tensor::f_ones([block, block], (Kind::Bool, cand.device()))?.f_tril(0)?.f_view([1, 1, block, block, 1])?;
    let weights = diff.f_masked_fill(&causal.f_logical_not()?, f64::NEG_INFINITY)?.f_exp()?; // k > t → 0
    let local = weights.f_mul(&g.f_unsqueeze(2)?)?.f_sum_dim_intlist(3, false, Kind::Float)?; // [b, n, B, H]
    let decay = cum.f_exp()?; // [b, n, B, H]: Π f from the block start to t
                              // Chaining the blocks is the same scan one level up, also without a loop: the state
                              // entering block n is Σ_{m<n} exp(S_{n−1} − S_m) · E_m, with E_m block m's own end state
                              // and S the running sum over blocks of each block's total log f.
                              // (S grows with the sequence, so the differences are taken in float64: in float32 a
                              // 320-frame chunk lost 3e-5 to cancellation. These tensors are n × n per channel, small.)
    let total = cum.f_select(2, block - 1)?.f_to_kind(Kind::Double)?; // [b, n, H]: log f summed over each block
    let s = total.f_cumsum(1, Kind::Double)?; // [b, n, H]: S_n
    let ends = local.f_select(2, block - 1)?; // [b, n, H]: E_n
    let gap = s.f_sub(&total)?.f_unsqueeze(2)?.f_sub(&s.f_unsqueeze(1)?)?; // [b, n, m, H]: S_{n−1} − S_m
    let earlier =
        Tensor::f_ones([blocks, blocks], (Kind::Bool, cand.device()))?.f_tril(-1)?.f_view([1, blocks, blocks, 1])?;
    let chain = gap.f_masked_fill(&earlier.f_logical_not()?, f64::NEG_INFINITY)?.f_exp()?.f_to_kind(Kind::Float)?; // m ≥ n → 0
    let carry = chain.f_mul(&ends.f_unsqueeze(1)?)?.f_sum_dim_intlist(2, false, Kind::Float)?; // [b, n, H]
    let c = local.f_add(&decay.f_mul(&carry.f_unsqueeze(2)?)?)?; // [b, n, B, H]
    Ok(c.f_view([b, blocks * block, h])?.f_narrow(1, 0, t)?)
}

/// eq. 23 one frame at a time: the oracle for [`fo_pool`].
///
/// # Shapes
/// `cand`, `log_f`: `[b, t, H]` → `[b, t, H]`.
pub fn fo_pool_loop(cand: &Tensor, log_f: &Tensor) -> Result<Tensor, TrainError> {
    let (b, t, h) = (cand.size()[0], cand.size()[1], cand.size()[2]);
    let f = log_f.f_exp()?;
    let mut c = Tensor::f_zeros([b, h], (Kind::Float, cand.device()))?;
    let mut out = Vec::with_capacity(t as usize);
    for k in 0..t {
        let fk = f.f_select(1, k)?;
        c = fk.f_mul(&c)?.f_add(&Tensor::f_ones_like(&fk)?.f_sub(&fk)?.f_mul(&cand.f_select(1, k)?)?)?;
        out.push(c.shallow_clone());
    }
    Ok(Tensor::f_stack(&out, 1)?)
}

/// A bidirectional QRNN layer: both directions' outputs stacked,
/// `[z_fwd; z_bwd]`.
pub struct BiQrnn {
    pub fwd: QrnnDirection,
    pub bwd: QrnnDirection,
}

impl BiQrnn {
    pub fn new(p: nn::Path<'_>, input: i64, hidden: i64) -> BiQrnn {
        BiQrnn {
            fwd: QrnnDirection::new(&p / "fwd", input, hidden),
            bwd: QrnnDirection::new(&p / "bwd", input, hidden),
        }
    }

    /// Both directions' `z`, not yet stacked.
    ///
    /// # Shapes
    /// `x`: `[b, t, D]` → two `[b, t, H]`.
    pub fn directions(&self, x: &Tensor) -> Result<(Tensor, Tensor), TrainError> {
        let f = self.fwd.forward(x)?;
        let b = self.bwd.forward(&x.f_flip([1])?)?.f_flip([1])?;
        Ok((f, b))
    }

    /// # Shapes
    /// `x`: `[b, t, D]` → `[b, t, 2H]`, forward channels first.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, TrainError> {
        let (f, b) = self.directions(x)?;
        Ok(Tensor::f_cat(&[f, b], 2)?)
    }
}

/// Interleaves two directions' channels, `u[2j] = f[j]`, `u[2j+1] = b[j]`,
/// so that a later split into halves gives each half both directions
/// (App. A.2).
///
/// # Shapes
/// `f`, `b`: `[b, t, H]` → `[b, t, 2H]`.
pub fn interleave(f: &Tensor, b: &Tensor) -> Result<Tensor, TrainError> {
    let s = f.size();
    Ok(Tensor::f_stack(&[f.shallow_clone(), b.shallow_clone()], 3)?.f_reshape([s[0], s[1], 2 * s[2]])?)
}
