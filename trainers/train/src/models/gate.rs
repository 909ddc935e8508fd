//! The WaveNet gate with its conditioning, forward and backward, for the
//! hand-written layer stack of [`super::wavenet`]: the fused CUDA kernels of
//! `dv-fused` on a GPU, the same arithmetic in libtorch operations anywhere
//! (the reference, and the oracle the kernels are checked against each time
//! they are loaded).
//!
//! Rows are samples "time-major, batch inner" (`t · batch + b`); a frame row
//! is `(t / hop) · batch + b`. `p` holds the tanh half then the sigmoid half:
//!
//! `z = tanh(p_a + l_a + bias_a) · σ(p_b + l_b + bias_b)`;
//! backward: `gp` for both halves, `gl` (float32) = Σ of `gp` over each
//! frame's `hop` samples.
//!
//! Both compute in float32 from the stored values and round once on store.

use std::sync::Arc;

use dv_fused::{GateKernels, GateShape};
use dv_torch::tch;
use dv_torch::tch::{Device, Kind, Tensor};

use crate::TrainError;

/// Where the gate runs.
#[derive(Clone)]
pub enum Gate {
    /// libtorch operations on any device.
    Reference,
    /// The fused kernels on one GPU.
    Cuda(Arc<GateKernels>),
}

impl Gate {
    /// The kernels on a CUDA device, checked against the reference on random
    /// inputs of the model's sizes in `kind` (an error if they differ); the
    /// reference elsewhere, and on a GPU whose driver or NVRTC cannot be
    /// loaded (with a warning: correct, but slower).
    pub fn for_device(device: Device, r: i64, hop: i64, kind: Kind) -> Result<Gate, TrainError> {
        let Device::Cuda(ordinal) = device else { return Ok(Gate::Reference) };
        let kernels = match GateKernels::new(ordinal) {
            Ok(k) => k,
            Err(e @ dv_fused::FusedError::CudaUnavailable { .. }) => {
                eprintln!(
                    "warning: {e}; the WaveNet gate runs as libtorch operations instead of the fused kernels (slower)"
                );
                return Ok(Gate::Reference);
            }
            Err(e) => return Err(e.into()),
        };
        let gate = Gate::Cuda(Arc::new(kernels));
        let report = gate.parity(device, GateShape { r, batch: 3, hop, frames: 5 }, kind)?;
        eprintln!("fused WaveNet gate on cuda:{ordinal} ({kind:?}): {report}");
        Ok(gate)
    }

    /// Compares this gate with the reference on seeded random inputs; returns
    /// the largest differences, or [`TrainError::KernelParity`] if one
    /// exceeds its tolerance (float32: 1e-5 of the scale; bfloat16: one unit
    /// in the last place of the outputs, 1e-4 of the scale for the float32
    /// sums).
    pub fn parity(&self, device: Device, s: GateShape, kind: Kind) -> Result<String, TrainError> {
        let (rows, fb, r) = (s.rows(), s.frames * s.batch, s.r);
        tch::manual_seed(1234);
        let opts = (Kind::Float, device);
        let p = Tensor::f_randn([rows, 2 * r], opts)?.f_mul_scalar(2.0)?.f_to_kind(kind)?;
        let all_l = Tensor::f_randn([fb, 6 * r], opts)?.f_to_kind(kind)?; // a layer's columns of three
        let l = all_l.f_narrow(1, 2 * r, 2 * r)?;
        let bias = Tensor::f_randn([2 * r], opts)?.f_mul_scalar(0.1)?.f_to_kind(kind)?;
        let all_gz = Tensor::f_randn([rows, 2 * r], opts)?.f_to_kind(kind)?;
        let gz = all_gz.f_narrow(1, r, r)?;
        let run = |g: &Gate| -> Result<[Tensor; 3], TrainError> {
            let z = Tensor::f_zeros([rows, r], (kind, device))?;
            let gp = Tensor::f_zeros([rows, 2 * r], (kind, device))?;
            let gl = Tensor::f_zeros([fb, 2 * r], opts)?;
            g.forward(s, &p, &l, &bias, &z)?;
            g.backward(s, &p, &l, &bias, &gz, &gp, &gl)?;
            Ok([z, gp, gl])
        };
        let (ours, reference) = (run(self)?, run(&Gate::Reference)?);
        let mut report = Vec::new();
        for (k, name) in ["z", "gp", "gl"].iter().enumerate() {
            let (a, b) = (ours[k].f_to_kind(Kind::Float)?, reference[k].f_to_kind(Kind::Float)?);
            let diff = a.f_sub(&b)?.f_abs()?;
            let scale = b.f_abs()?.f_max()?.double_value(&[]).max(1.0);
            // Allowed per element: float32 1e-5 of the scale; the float32 sums gl 1e-4 of it;
            // bfloat16 outputs one unit in their last place (2^-7 relative with 8 significant bits).
            let allowed = match (kind, *name) {
                (Kind::Float, _) => b.f_zeros_like()?.f_add_scalar(1e-5 * scale)?,
                (_, "gl") => b.f_zeros_like()?.f_add_scalar(1e-4 * scale)?,
                _ => b.f_abs()?.f_mul_scalar(1.0 / 128.0)?.f_clamp_min(2f64.powi(-24))?,
            };
            let excess = diff.f_sub(&allowed)?.f_max()?.double_value(&[]);
            let worst = diff.f_max()?.double_value(&[]);
            if excess > 0.0 || !worst.is_finite() {
                return Err(TrainError::KernelParity(format!("{name}: max |Δ| {worst:.3e} on {kind:?}")));
            }
            report.push(format!("max |Δ{name}| {worst:.2e}"));
        }
        Ok(format!("parity with the reference {}", report.join(", ")))
    }

    /// Writes the gate output into `z` (module docs).
    ///
    /// # Shapes
    /// `p` `[rows, 2r]` contiguous, `l` `[frames · batch, 2r]` (rows of any
    /// stride), `bias` `[2r]`, `z` `[rows, r]` (rows of any stride).
    pub fn forward(&self, s: GateShape, p: &Tensor, l: &Tensor, bias: &Tensor, z: &Tensor) -> Result<(), TrainError> {
        match self {
            Gate::Cuda(k) => k.forward(s, p, l, bias, z).map_err(TrainError::from),
            Gate::Reference => {
                let (a, b) = reference_halves(s, p, l, bias)?;
                let out = a.f_tanh()?.f_mul(&b.f_sigmoid()?)?; // [F, hop, batch, r]
                copy_rows(z, &out.f_reshape([s.rows(), s.r])?)
            }
        }
    }

    /// Writes the backward into `gp` and `gl` (module docs).
    ///
    /// # Shapes
    /// As [`Gate::forward`]; `gz` `[rows, r]` (rows of any stride), `gp`
    /// `[rows, 2r]` contiguous, `gl` `[frames · batch, 2r]` float32 (rows of
    /// any stride).
    #[allow(clippy::too_many_arguments)]
    pub fn backward(
        &self,
        s: GateShape,
        p: &Tensor,
        l: &Tensor,
        bias: &Tensor,
        gz: &Tensor,
        gp: &Tensor,
        gl: &Tensor,
    ) -> Result<(), TrainError> {
        match self {
            Gate::Cuda(k) => k.backward(s, p, l, bias, gz, gp, gl).map_err(TrainError::from),
            Gate::Reference => {
                let (a, b) = reference_halves(s, p, l, bias)?;
                let (ta, sb) = (a.f_tanh()?, b.f_sigmoid()?);
                let g = gz.f_to_kind(Kind::Float)?.f_reshape([s.frames, s.hop, s.batch, s.r])?;
                let ga = g.f_mul(&sb)?.f_mul(&ta.f_square()?.f_neg()?.f_add_scalar(1.0)?)?;
                let gb = g.f_mul(&ta)?.f_mul(&sb)?.f_mul(&sb.f_neg()?.f_add_scalar(1.0)?)?;
                let both = Tensor::f_cat(&[ga, gb], 3)?; // [F, hop, batch, 2r]
                copy_rows(gp, &both.f_reshape([s.rows(), 2 * s.r])?)?;
                copy_rows(gl, &both.f_sum_dim_intlist(1, false, Kind::Float)?.f_reshape([s.frames * s.batch, 2 * s.r])?)
            }
        }
    }
}

/// The two pre-activations in float32, `[frames, hop, batch, r]` each.
fn reference_halves(s: GateShape, p: &Tensor, l: &Tensor, bias: &Tensor) -> Result<(Tensor, Tensor), TrainError> {
    let lb = l.f_to_kind(Kind::Float)?.f_add(&bias.f_to_kind(Kind::Float)?)?.f_view([s.frames, 1, s.batch, 2 * s.r])?;
    let h = p.f_to_kind(Kind::Float)?.f_view([s.frames, s.hop, s.batch, 2 * s.r])?.f_add(&lb)?;
    let halves = h.f_chunk(2, 3)?;
    Ok((halves[0].shallow_clone(), halves[1].shallow_clone()))
}

/// `dst.copy_(src)` in `dst`'s kind (rounding once).
fn copy_rows(dst: &Tensor, src: &Tensor) -> Result<(), TrainError> {
    let mut d = dst.shallow_clone();
    d.f_copy_(&src.f_to_kind(dst.kind())?)?;
    Ok(())
}
