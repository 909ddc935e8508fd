//! Fused CUDA kernels that `dv-train` runs on libtorch tensors: the WaveNet
//! gate of Deep Voice App. A.1 with its per-layer conditioning (App. A.2),
//! forward and backward, each one pass over memory.
//!
//! Why: the training step of the (40, 64, 256) WaveNet is bound by memory
//! traffic, not arithmetic. In eager libtorch the gate is about ten
//! elementwise kernels per layer forward and backward (add bias, add `L`,
//! tanh, sigmoid, product, their backward, the reduction of `L`'s gradient
//! over each frame's samples); `benchmarks/wavenet.md` measures the fused
//! step against it. libtorch's autograd cannot be given a rule for a kernel
//! from Rust, so `dv-train` writes the layer stack's backward by hand
//! (matrix products through libtorch) and calls these two kernels for the
//! gate; `dv-train` also has the same gate in libtorch operations, the
//! reference on CPU and the oracle these kernels are checked against.
//!
//! Layout and arithmetic are stated in `kernels/gate.cu`: rows are samples
//! "time-major, batch inner" (`t · batch + b`), `p` holds the tanh half then
//! the sigmoid half, float32 or bfloat16 storage with float32 arithmetic.
//! Kernels run on the CUDA legacy default stream, which is libtorch's
//! current stream unless a caller changes it, so they are ordered with the
//! matrix products around them. The driver and NVRTC are loaded with
//! `dlopen` by [`GateKernels::new`]; this crate builds and links on machines
//! without CUDA. The only `unsafe` is in [`GateKernels`]' launches.
#![deny(unsafe_code)]

use std::sync::Arc;

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, DriverError, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{self, CompileError, CompileOptions, Ptx};
use dv_torch::tch::{Device, Kind, Tensor};

const GATE_SRC: &str = include_str!("../kernels/gate.cu");

/// What went wrong, with what the caller can act on.
#[derive(Debug, thiserror::Error)]
pub enum FusedError {
    /// The driver or NVRTC cannot be loaded, or the device does not exist.
    #[error("CUDA unavailable: {reason}")]
    CudaUnavailable { reason: String },
    /// NVRTC rejected the kernel source.
    #[error("NVRTC could not compile {kernel}:\n{log}")]
    Compile { kernel: String, log: String },
    /// A driver call failed.
    #[error("{call} failed: {reason}")]
    Driver { call: &'static str, reason: String },
    /// A tensor is not what the kernel takes.
    #[error("fused gate: {what} must be {expected}, got {got}")]
    Layout { what: &'static str, expected: String, got: String },
}

fn driver(call: &'static str) -> impl FnOnce(DriverError) -> FusedError {
    move |e| FusedError::Driver { call, reason: e.to_string() }
}

/// Whether the CUDA driver and NVRTC libraries can be loaded here.
pub fn cuda_available() -> bool {
    // SAFETY: both calls only try to dlopen the library and drop it.
    #[allow(unsafe_code)]
    unsafe {
        cudarc::driver::sys::is_culib_present() && nvrtc::sys::is_culib_present()
    }
}

/// One layer's gate: `rows = frames · hop · batch` samples of `r` channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateShape {
    /// Residual channels (the gate's output width; `p` has `2r`).
    pub r: i64,
    /// Examples, the inner index of a row.
    pub batch: i64,
    /// Samples per conditioning frame.
    pub hop: i64,
    /// Conditioning frames per example.
    pub frames: i64,
}

impl GateShape {
    /// Sample rows.
    pub fn rows(&self) -> i64 {
        self.frames * self.hop * self.batch
    }
}

/// The gate kernels compiled for one device.
pub struct GateKernels {
    device: usize,
    stream: Arc<CudaStream>,
    /// float32 then bfloat16 entry points.
    fwd: [CudaFunction; 2],
    bwd: [CudaFunction; 2],
    sm_count: u32,
    _module: Arc<CudaModule>,
}

/// Checks a 2-D tensor: device, kind, size and a unit column stride; returns its row stride.
fn matrix(
    what: &'static str,
    t: &Tensor,
    device: usize,
    kind: Kind,
    rows: i64,
    cols: i64,
    contiguous: bool,
) -> Result<i64, FusedError> {
    let bad = |expected: String, got: String| FusedError::Layout { what, expected, got };
    if t.device() != Device::Cuda(device) {
        return Err(bad(format!("on cuda:{device}"), format!("{:?}", t.device())));
    }
    if t.kind() != kind {
        return Err(bad(format!("{kind:?}"), format!("{:?}", t.kind())));
    }
    if t.size() != [rows, cols] {
        return Err(bad(format!("[{rows}, {cols}]"), format!("{:?}", t.size())));
    }
    let stride = t.stride();
    let ld = stride[0];
    if stride[1] != 1 || ld < cols || (contiguous && ld != cols) {
        return Err(bad(
            if contiguous { "contiguous".into() } else { "rows of unit column stride".into() },
            format!("strides {stride:?}"),
        ));
    }
    Ok(ld)
}

/// A vector as a one-row matrix.
fn row(t: &Tensor) -> Result<Tensor, FusedError> {
    t.f_view([1, -1]).map_err(|e| FusedError::Layout { what: "bias", expected: "a vector".into(), got: e.to_string() })
}

/// The storage kind's entry index and the kind itself.
fn entry(p: &Tensor) -> Result<(usize, Kind), FusedError> {
    match p.kind() {
        Kind::Float => Ok((0, Kind::Float)),
        Kind::BFloat16 => Ok((1, Kind::BFloat16)),
        k => Err(FusedError::Layout { what: "p", expected: "Float or BFloat16".into(), got: format!("{k:?}") }),
    }
}

/// The kernels' PTX for `arch` (e.g. `"compute_90"`), compiled with NVRTC;
/// needs no GPU. [`FusedError::CudaUnavailable`] when NVRTC cannot be loaded.
pub fn compile_ptx(arch: &str) -> Result<Ptx, FusedError> {
    // SAFETY: only tries to dlopen the library and drop it.
    #[allow(unsafe_code)]
    if !unsafe { nvrtc::sys::is_culib_present() } {
        return Err(FusedError::CudaUnavailable {
            reason: "NVRTC (libnvrtc.so.13) cannot be loaded; put its directory (e.g. the Python wheel's \
                     site-packages/nvidia/cu13/lib) on LD_LIBRARY_PATH"
                .into(),
        });
    }
    let opts = CompileOptions {
        options: vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()],
        name: Some("gate.cu".into()),
        ..Default::default()
    };
    nvrtc::compile_ptx_with_opts(GATE_SRC, opts).map_err(|e| FusedError::Compile {
        kernel: "gate.cu".into(),
        log: match e {
            CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
            other => format!("{other:?}"),
        },
    })
}

impl GateKernels {
    /// Compiles the kernels for CUDA device `ordinal` (libtorch's
    /// `Device::Cuda(ordinal)`).
    pub fn new(ordinal: usize) -> Result<GateKernels, FusedError> {
        if !cuda_available() {
            return Err(FusedError::CudaUnavailable {
                reason: "the CUDA driver (libcuda.so.1) or NVRTC (libnvrtc.so.13) cannot be loaded; put NVRTC's \
                         directory (e.g. the Python wheel's site-packages/nvidia/cu13/lib) on LD_LIBRARY_PATH"
                    .into(),
            });
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| FusedError::CudaUnavailable { reason: format!("device {ordinal}: {e}") })?;
        let (major, minor) = ctx.compute_capability().map_err(driver("cuDeviceGetAttribute(compute capability)"))?;
        let ptx = compile_ptx(&format!("compute_{major}{minor}"))?;
        let module = ctx.load_module(ptx).map_err(driver("cuModuleLoadData(gate)"))?;
        let load = |name: &str| module.load_function(name).map_err(driver("cuModuleGetFunction(gate)"));
        let fwd = [load("gate_fwd_f32")?, load("gate_fwd_bf16")?];
        let bwd = [load("gate_bwd_f32")?, load("gate_bwd_bf16")?];
        let sm_count = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(driver("cuDeviceGetAttribute(multiprocessors)"))?
            .max(1) as u32;
        Ok(GateKernels { device: ordinal, stream: ctx.default_stream(), fwd, bwd, sm_count, _module: module })
    }

    /// `z = tanh(p_a + l_a + bias_a) · σ(p_b + l_b + bias_b)`, enqueued.
    ///
    /// # Shapes
    /// * `p`: `[rows, 2r]` contiguous (sample rows, module docs)
    /// * `l`: `[frames · batch, 2r]`, rows of any stride (a layer's columns of all layers' `L`)
    /// * `bias`: `[2r]` contiguous
    /// * `z`: `[rows, r]`, rows of any stride (written)
    ///
    /// All of one kind (float32 or bfloat16) on this device.
    pub fn forward(&self, s: GateShape, p: &Tensor, l: &Tensor, bias: &Tensor, z: &Tensor) -> Result<(), FusedError> {
        let (e, kind) = entry(p)?;
        let (rows, fb, r) = (s.rows(), s.frames * s.batch, s.r);
        matrix("p", p, self.device, kind, rows, 2 * r, true)?;
        let ldl = matrix("l", l, self.device, kind, fb, 2 * r, false)?;
        matrix("bias", &row(bias)?, self.device, kind, 1, 2 * r, true)?;
        let ldz = matrix("z", z, self.device, kind, rows, r, false)?;
        let n = (rows * r) as u64;
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(256).min(self.sm_count as u64 * 16).max(1) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let ptrs = [p, l, bias, z].map(|t| t.data_ptr() as u64);
        let (ri, bi, hi) = (r as i32, s.batch as i32, s.hop as i32);
        let mut b = self.stream.launch_builder(&self.fwd[e]);
        b.arg(&ptrs[0]).arg(&ptrs[1]).arg(&ldl).arg(&ptrs[2]).arg(&ptrs[3]).arg(&ldz);
        b.arg(&ri).arg(&bi).arg(&hi).arg(&rows);
        // SAFETY: every pointer is the data of a tensor checked above to be on this device, of
        // the entry's element type, and of the sizes and strides the kernel indexes; the
        // kernel's loop stays below rows · r. The tensors outlive the launch because the
        // caller holds them until later work on the same stream has consumed them.
        #[allow(unsafe_code)]
        unsafe { b.launch(cfg) }.map_err(driver("cuLaunchKernel(gate_fwd)"))?;
        Ok(())
    }

    /// The gate's backward, enqueued: `gp` (both halves) from `gz`, and `gl`
    /// (float32) the sum of `gp` over each frame's `hop` samples, the
    /// gradient of `l` and, summed over rows, of `bias`.
    ///
    /// # Shapes
    /// `p`, `l`, `bias` as in [`GateKernels::forward`]; `gz` `[rows, r]`
    /// (rows of any stride); `gp` `[rows, 2r]` contiguous (written); `gl`
    /// `[frames · batch, 2r]` float32, rows of any stride (written).
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
    ) -> Result<(), FusedError> {
        let (e, kind) = entry(p)?;
        let (rows, fb, r) = (s.rows(), s.frames * s.batch, s.r);
        matrix("p", p, self.device, kind, rows, 2 * r, true)?;
        let ldl = matrix("l", l, self.device, kind, fb, 2 * r, false)?;
        matrix("bias", &row(bias)?, self.device, kind, 1, 2 * r, true)?;
        let ldgz = matrix("gz", gz, self.device, kind, rows, r, false)?;
        matrix("gp", gp, self.device, kind, rows, 2 * r, true)?;
        let ldgl = matrix("gl", gl, self.device, Kind::Float, fb, 2 * r, false)?;
        if !(1..=1024).contains(&r) {
            return Err(FusedError::Layout { what: "r", expected: "1..=1024".into(), got: r.to_string() });
        }
        // r channels × G row groups per block, up to 256 threads, no more groups than samples.
        let groups = (256 / r).clamp(1, s.hop.max(1));
        let cfg = LaunchConfig {
            grid_dim: (fb as u32, 1, 1),
            block_dim: ((r * groups) as u32, 1, 1),
            shared_mem_bytes: (groups * 2 * r * 4) as u32,
        };
        let ptrs = [p, l, bias, gz, gp, gl].map(|t| t.data_ptr() as u64);
        let (ri, bi, hi) = (r as i32, s.batch as i32, s.hop as i32);
        let mut b = self.stream.launch_builder(&self.bwd[e]);
        b.arg(&ptrs[0]).arg(&ptrs[1]).arg(&ldl).arg(&ptrs[2]).arg(&ptrs[3]).arg(&ldgz);
        b.arg(&ptrs[4]).arg(&ptrs[5]).arg(&ldgl).arg(&ri).arg(&bi).arg(&hi);
        // SAFETY: as in `forward`: every pointer is a checked tensor's data of the sizes and
        // strides the kernel indexes (one block per frame row, fb of them; G · 2r floats of
        // dynamic shared memory as configured).
        #[allow(unsafe_code)]
        unsafe { b.launch(cfg) }.map_err(driver("cuLaunchKernel(gate_bwd)"))?;
        Ok(())
    }
}
