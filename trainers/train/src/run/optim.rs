//! Adam exactly as PyTorch's `torch.optim.Adam` (single-tensor, not fused,
//! no weight decay, no AMSGrad) with Deep Voice's β1 = 0.9, β2 = 0.999,
//! ε = 1e-8, the paper's step annealing, and global-norm gradient clipping.
//!
//! The optimizer is ours rather than tch's `nn::Adam` because its state (the
//! moment tensors and the step count) must be saved in checkpoints and
//! restored bit for bit, which tch's C++ optimizer does not expose.

use dv_torch::tch;
use dv_torch::tch::Tensor;

use crate::TrainError;

// Defined in dv-config with the run config, which parses them without libtorch.
pub use dv_config::{AdamConfig, StepAnnealing};

/// Adam over a fixed list of parameters; `m` and `v` hold the first and
/// second moments, `step` the number of updates taken.
///
/// When every parameter is a float32 tensor on one device, `m` and `v` are
/// views into two flat buffers and a step updates the moments in a handful
/// of kernels over the flat buffers instead of ~10 per parameter (on a GPU
/// the per-parameter form costs ~20 ms per step in kernel launches for the
/// WaveNet's 170 tensors). The arithmetic is elementwise and in the same
/// order either way, so both forms give the same bits.
pub struct Adam {
    pub config: AdamConfig,
    pub step: u64,
    pub m: Vec<Tensor>,
    pub v: Vec<Tensor>,
    /// `(flat m, flat v)` that `m` and `v` are views of, when flat.
    flat: Option<(Tensor, Tensor)>,
}

impl Adam {
    pub fn new(config: AdamConfig, params: &[Tensor]) -> Result<Adam, TrainError> {
        let flat_ok = params
            .first()
            .is_some_and(|p0| params.iter().all(|p| p.kind() == tch::Kind::Float && p.device() == p0.device()));
        if flat_ok {
            let total: i64 = params.iter().map(|p| p.numel() as i64).sum();
            let opts = (tch::Kind::Float, params[0].device());
            let (fm, fv) = (Tensor::f_zeros([total], opts)?, Tensor::f_zeros([total], opts)?);
            let views = |flat: &Tensor| -> Result<Vec<Tensor>, TrainError> {
                let mut off = 0;
                let mut out = Vec::with_capacity(params.len());
                for p in params {
                    let n = p.numel() as i64;
                    out.push(flat.f_narrow(0, off, n)?.f_view(p.size().as_slice())?);
                    off += n;
                }
                Ok(out)
            };
            return Ok(Adam { config, step: 0, m: views(&fm)?, v: views(&fv)?, flat: Some((fm, fv)) });
        }
        let zeros = |p: &Tensor| p.f_zeros_like().map_err(TrainError::from);
        Ok(Adam {
            config,
            step: 0,
            m: params.iter().map(zeros).collect::<Result<_, _>>()?,
            v: params.iter().map(zeros).collect::<Result<_, _>>()?,
            flat: None,
        })
    }

    /// One update of every parameter from its `.grad()` at learning rate
    /// `lr`. Parameters without a gradient are left alone.
    pub fn step(&mut self, params: &[Tensor], lr: f64) -> Result<(), TrainError> {
        let c = self.config;
        self.step += 1;
        let bc1 = 1.0 - c.beta1.powi(self.step as i32);
        let bc2 = 1.0 - c.beta2.powi(self.step as i32);
        let step_size = lr / bc1;
        let bc2_sqrt = bc2.sqrt();
        let all_grads = params.iter().all(|p| p.grad().defined());
        tch::no_grad(|| -> Result<(), TrainError> {
            if let (Some((fm, fv)), true) = (&mut self.flat, all_grads) {
                let grads: Vec<Tensor> = params.iter().map(|p| p.grad().f_reshape([-1])).collect::<Result<_, _>>()?;
                let update = flat_update(c, fm, fv, &Tensor::f_cat(&grads, 0)?, step_size, bc2_sqrt)?;
                let mut off = 0;
                for p in params {
                    let n = p.numel() as i64;
                    let mut p = p.shallow_clone();
                    let _ = p.f_sub_(&update.f_narrow(0, off, n)?.f_view(p.size().as_slice())?)?;
                    off += n;
                }
                return Ok(());
            }
            for ((p, m), v) in params.iter().zip(&mut self.m).zip(&mut self.v) {
                let g = p.grad();
                if !g.defined() {
                    continue;
                }
                // m = β1 m + (1 - β1) g
                let _ = m.f_mul_scalar_(c.beta1)?;
                let _ = m.f_add_(&g.f_mul_scalar(1.0 - c.beta1)?)?;
                // v = β2 v + (1 - β2) g²
                let _ = v.f_mul_scalar_(c.beta2)?;
                let _ = v.f_addcmul_(&g, &g.f_mul_scalar(1.0 - c.beta2)?)?;
                // p -= lr / bc1 · m / (sqrt(v) / sqrt(bc2) + ε)
                let denom = v.f_sqrt()?.f_div_scalar(bc2_sqrt)?.f_add_scalar(c.eps)?;
                let mut p = p.shallow_clone();
                let _ = p.f_sub_(&m.f_div(&denom)?.f_mul_scalar(step_size)?)?;
            }
            Ok(())
        })
    }
}

/// Adam's flat moments updated with the flat gradient `g`; returns the
/// parameter update (to subtract).
fn flat_update(
    c: AdamConfig,
    fm: &mut Tensor,
    fv: &mut Tensor,
    g: &Tensor,
    step_size: f64,
    bc2_sqrt: f64,
) -> Result<Tensor, TrainError> {
    let _ = fm.f_mul_scalar_(c.beta1)?;
    let _ = fm.f_add_(&g.f_mul_scalar(1.0 - c.beta1)?)?;
    let _ = fv.f_mul_scalar_(c.beta2)?;
    let _ = fv.f_addcmul_(g, &g.f_mul_scalar(1.0 - c.beta2)?)?;
    let denom = fv.f_sqrt()?.f_div_scalar(bc2_sqrt)?.f_add_scalar(c.eps)?;
    Ok(fm.f_div(&denom)?.f_mul_scalar(step_size)?)
}

impl Adam {
    /// [`Adam::step`] for parameters that live in `flat` (in the order Adam
    /// was built with): the same arithmetic on the whole buffers, so the
    /// same bits, in a handful of kernels and no per-parameter work.
    pub fn step_flat(&mut self, flat: &FlatParams, lr: f64) -> Result<(), TrainError> {
        let c = self.config;
        let Some((fm, fv)) = &mut self.flat else {
            return Err(TrainError::Config {
                path: "[optimizer]".into(),
                reason: "step_flat on an Adam without flat moments".into(),
            });
        };
        self.step += 1;
        let bc1 = 1.0 - c.beta1.powi(self.step as i32);
        let bc2 = 1.0 - c.beta2.powi(self.step as i32);
        tch::no_grad(|| -> Result<(), TrainError> {
            let update = flat_update(c, fm, fv, &flat.grads()?, lr / bc1, bc2.sqrt())?;
            let _ = flat.values.shallow_clone().f_sub_(&update)?;
            Ok(())
        })
    }
}

/// Every parameter, and its gradient, as a view of one flat float32 buffer
/// (what PyTorch's DDP and Apex do): zeroing the gradients, summing them
/// over ranks, clipping and Adam's update each become a few kernels over
/// the buffers instead of a few per parameter. The gradient buffer has
/// `extra` floats after the gradients, for per-step numbers (the loss)
/// that ride in the same all-reduce.
///
/// Every gradient is defined from the start (zeros), as after PyTorch's
/// `zero_grad(set_to_none=False)`: a parameter a step does not reach still
/// gets Adam's update from its moments.
pub struct FlatParams {
    /// The parameters' values, in order.
    pub values: Tensor,
    /// Their gradients, then the `extra` floats.
    pub grads_and_extra: Tensor,
    len: i64,
}

impl FlatParams {
    /// Moves `params` (float32, one device) into flat buffers; `None` if
    /// they are not all float32 on one device, or if libtorch did not keep
    /// a gradient as a view of the buffer (then the caller keeps the
    /// per-parameter path).
    pub fn new(params: &[Tensor], extra: i64) -> Result<Option<FlatParams>, TrainError> {
        let Some(p0) = params.first() else { return Ok(None) };
        let device = p0.device();
        if !params.iter().all(|p| p.kind() == tch::Kind::Float && p.device() == device && p.requires_grad()) {
            return Ok(None);
        }
        let len: i64 = params.iter().map(|p| p.numel() as i64).sum();
        let opts = (tch::Kind::Float, device);
        let values = Tensor::f_zeros([len], opts)?;
        let grads_and_extra = Tensor::f_zeros([len + extra], opts)?;
        // Every gradient defined (zeros, from one backward), so it can be re-pointed.
        let sums: Vec<Tensor> = params.iter().map(|p| p.f_sum(tch::Kind::Float)).collect::<Result<_, _>>()?;
        Tensor::f_stack(&sums, 0)?.f_sum(tch::Kind::Float)?.f_mul_scalar(0.0)?.f_backward()?;
        let mut off = 0;
        let mut at = Vec::with_capacity(params.len());
        tch::no_grad(|| -> Result<(), TrainError> {
            for p in params {
                let n = p.numel() as i64;
                let v = values.f_narrow(0, off, n)?.f_view(p.size().as_slice())?;
                v.shallow_clone().f_copy_(p)?;
                p.shallow_clone().f_set_data(&v)?;
                let g = grads_and_extra.f_narrow(0, off, n)?.f_view(p.size().as_slice())?;
                let _ = p.grad().f_set_source_tensor_(&g)?;
                let _ = g.shallow_clone().f_zero_()?;
                at.push((v.data_ptr(), g.data_ptr()));
                off += n;
            }
            Ok(())
        })?;
        let shared = params.iter().zip(&at).all(|(p, &(v, g))| p.data_ptr() == v && p.grad().data_ptr() == g);
        Ok(shared.then_some(FlatParams { values, grads_and_extra, len }))
    }

    /// The gradients (the buffer without its extra floats).
    pub fn grads(&self) -> Result<Tensor, TrainError> {
        Ok(self.grads_and_extra.f_narrow(0, 0, self.len)?)
    }

    /// The extra floats after the gradients.
    pub fn extra(&self) -> Result<Tensor, TrainError> {
        let n = self.grads_and_extra.numel() as i64 - self.len;
        Ok(self.grads_and_extra.f_narrow(0, self.len, n)?)
    }

    /// [`clip_grad_norm`] over the flat gradients: one reduction, one read.
    pub fn clip_grad_norm(&self, max_norm: f64) -> Result<f64, TrainError> {
        tch::no_grad(|| -> Result<f64, TrainError> {
            let mut g = self.grads()?;
            let norm = g.f_square()?.f_sum(tch::Kind::Double)?.double_value(&[]).sqrt();
            let coef = max_norm / (norm + 1e-6);
            if coef < 1.0 {
                let _ = g.f_mul_scalar_(coef)?;
            }
            Ok(norm)
        })
    }
}

/// Scales the gradients so their global L2 norm is at most `max_norm`, as
/// `torch.nn.utils.clip_grad_norm_` does; returns the norm before clipping.
pub fn clip_grad_norm(params: &[Tensor], max_norm: f64) -> Result<f64, TrainError> {
    tch::no_grad(|| -> Result<f64, TrainError> {
        let mut sq = 0.0;
        for p in params {
            let g = p.grad();
            if g.defined() {
                sq += g.f_square()?.f_sum(tch::Kind::Double)?.double_value(&[]);
            }
        }
        let norm = sq.sqrt();
        let coef = max_norm / (norm + 1e-6);
        if coef < 1.0 {
            for p in params {
                let mut g = p.grad();
                if g.defined() {
                    let _ = g.f_mul_scalar_(coef)?;
                }
            }
        }
        Ok(norm)
    })
}
