//! The CUDA half: both kernels compiled at run time with NVRTC and launched
//! through `cudarc`. The only module with `unsafe`; every driver error
//! becomes a [`GpuError`] naming the call. The driver and NVRTC are loaded
//! with `dlopen`, so the crate builds and its host half runs without CUDA.

use std::sync::Arc;

use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags, CUfunction_attribute};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DriverError, LaunchArgs,
};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{self, CompileError, CompileOptions, Ptx};
use dv_synth::Conditioning;

use crate::error::GpuError;
use crate::model::{MultiLayout, SingleLayout, Sizes, Stored, Weights, A};
use crate::sampling::{rng_state, GpuSampling};
use crate::source::{MultiKernel, MultiPlan, SinglePlan};

mod conditioner;
mod pipeline;
pub use conditioner::{conditioning_source, CondPhases, GpuConditioner, Projector};
pub use pipeline::{PipeTimes, Pipelined};

fn driver(call: &'static str) -> impl FnOnce(DriverError) -> GpuError {
    move |e| GpuError::Driver { call, reason: e.to_string() }
}

/// Pushes `slice` as a kernel argument, or a null pointer where there is none.
fn arg_or_null<'a, T>(b: &mut LaunchArgs<'a>, slice: Option<&'a mut CudaSlice<T>>, null: &'a u64) {
    match slice {
        Some(s) => b.arg(s),
        None => b.arg(null),
    };
}

/// Each frame's voicing as the kernels read it (`voiced[row]`, 1 voiced):
/// the conditioning's mask ([`Conditioning::voiced`]; every frame without one).
pub fn voicing(cond: &Conditioning) -> Vec<u8> {
    (0..cond.frames()).map(|f| u8::from(cond.voiced(f))).collect()
}

/// Kernel time between the launch's two events, ms.
fn event_ms(events: Option<(CudaEvent, CudaEvent)>) -> Result<f32, GpuError> {
    match events {
        Some((start, end)) => start.elapsed_ms(&end).map_err(driver("cuEventElapsedTime")),
        None => Ok(f32::NAN),
    }
}

/// A kernel's phase clock (poisoned with −1 before the launch), checked
/// written.
fn read_clock(
    s: &Arc<CudaStream>,
    prof: Option<CudaSlice<i64>>,
    what: &'static str,
) -> Result<Option<Vec<i64>>, GpuError> {
    let Some(p) = prof else { return Ok(None) };
    let v = s.clone_dtoh(&p).map_err(driver("cuMemcpyDtoH(phase clock)"))?;
    let unwritten = v.iter().filter(|&&c| c < 0).count();
    if unwritten > 0 {
        return Err(GpuError::Unwritten { what, count: unwritten });
    }
    Ok(Some(v))
}

/// The eight phase counters every kernel's clock starts with.
fn first8(v: &[i64]) -> [i64; 8] {
    let mut a = [0; 8];
    a.copy_from_slice(&v[..8]);
    a
}

/// Whether NVRTC can be loaded here (compiling needs no GPU).
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to dlopen the library; nothing is resolved or called.
    unsafe { nvrtc::sys::is_culib_present() }
}

/// Whether the CUDA driver library can be loaded here.
pub fn driver_available() -> bool {
    // SAFETY: as in `nvrtc_available`.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Compiles `src` to PTX for `arch` (e.g. `"compute_90"`) with NVRTC. Needs
/// no GPU; [`GpuError::CudaUnavailable`] when NVRTC cannot be loaded.
pub fn compile_ptx(src: &str, kernel: &str, arch: &str) -> Result<Ptx, GpuError> {
    if !nvrtc_available() {
        return Err(GpuError::CudaUnavailable {
            reason: "NVRTC (libnvrtc.so.13) cannot be loaded; put its directory (e.g. the Python wheel's \
                     site-packages/nvidia/cu13/lib) on LD_LIBRARY_PATH"
                .into(),
        });
    }
    let mut options = vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()];
    // Experiment switches (`DV_GPU_DEFINES="FAST_GATE ..."`), recorded with any figure they produce.
    if let Ok(defs) = std::env::var("DV_GPU_DEFINES") {
        options.extend(defs.split_whitespace().map(|d| format!("-D{d}")));
    }
    let opts = CompileOptions { options, name: Some(kernel.to_string()), ..Default::default() };
    let ptx = nvrtc::compile_ptx_with_opts(src, opts).map_err(|e| GpuError::Compile {
        kernel: kernel.to_string(),
        log: match e {
            CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
            other => format!("{other:?}"),
        },
    })?;
    if let Some(dir) = std::env::var_os("DV_GPU_DUMP_PTX") {
        // For `ptxas -v` resource reports: one file per specialization and target.
        let h = (src.bytes().chain(arch.bytes()))
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        let path = std::path::Path::new(&dir).join(format!("{kernel}-{h:016x}.ptx"));
        let _ = std::fs::write(path, ptx.to_src());
    }
    Ok(ptx)
}

/// One GPU and the stream both kernels run on.
pub struct GpuDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    capability: (i32, i32),
    sm_count: usize,
    smem_optin: usize,
    smem_per_sm: usize,
}

impl GpuDevice {
    /// Opens device `ordinal`.
    pub fn new(ordinal: usize) -> Result<Self, GpuError> {
        if !driver_available() {
            return Err(GpuError::CudaUnavailable {
                reason: "the CUDA driver library (libcuda.so.1) cannot be loaded".into(),
            });
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| GpuError::CudaUnavailable { reason: format!("device {ordinal}: {e}") })?;
        let capability = ctx.compute_capability().map_err(driver("cuDeviceGetAttribute(compute capability)"))?;
        let name = ctx.name().map_err(driver("cuDeviceGetName"))?;
        let sm_count = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(driver("cuDeviceGetAttribute(multiprocessors)"))? as usize;
        let smem_optin = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .map_err(driver("cuDeviceGetAttribute(shared memory opt-in)"))? as usize;
        let smem_per_sm =
            ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
                .map_err(driver("cuDeviceGetAttribute(shared memory per multiprocessor)"))? as usize;
        let stream = ctx.default_stream();
        Ok(Self { ctx, stream, name, capability, sm_count, smem_optin, smem_per_sm })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn compute_capability(&self) -> (i32, i32) {
        self.capability
    }

    pub fn multiprocessors(&self) -> usize {
        self.sm_count
    }

    /// Shared memory of one multiprocessor, bytes.
    pub fn shared_memory_per_multiprocessor(&self) -> usize {
        self.smem_per_sm
    }

    /// Device memory free now, bytes.
    pub fn free_memory(&self) -> Result<usize, GpuError> {
        self.ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        cudarc::driver::result::mem_get_info().map(|(free, _)| free).map_err(driver("cuMemGetInfo"))
    }

    /// Shared memory a block may opt into, bytes.
    pub fn shared_memory_limit(&self) -> usize {
        self.smem_optin
    }

    fn arch(&self) -> String {
        format!("compute_{}{}", self.capability.0, self.capability.1)
    }

    fn load(&self, src: &str, kernel: &str, smem: usize) -> Result<(Arc<CudaModule>, CudaFunction), GpuError> {
        self.load_for(src, kernel, smem, &self.arch())
    }

    fn load_for(
        &self,
        src: &str,
        kernel: &str,
        smem: usize,
        arch: &str,
    ) -> Result<(Arc<CudaModule>, CudaFunction), GpuError> {
        let ptx = compile_ptx(src, kernel, arch)?;
        let module = self.ctx.load_module(ptx).map_err(driver("cuModuleLoadData"))?;
        let func = module.load_function(kernel).map_err(driver("cuModuleGetFunction"))?;
        func.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
            .map_err(driver("cuFuncSetAttribute(dynamic shared memory)"))?;
        Ok((module, func))
    }

    fn upload<T: cudarc::driver::DeviceRepr>(&self, what: &'static str, v: &[T]) -> Result<CudaSlice<T>, GpuError> {
        if v.is_empty() {
            return Err(GpuError::Shape { what, expected: 1, got: 0 });
        }
        self.stream.clone_htod(v).map_err(driver("cuMemcpyHtoD"))
    }
}

/// A weight matrix set on the device.
enum DevMat {
    F32(CudaSlice<f32>),
    Bf16(CudaSlice<u16>),
}

impl DevMat {
    fn new(dev: &GpuDevice, what: &'static str, m: &Stored) -> Result<Self, GpuError> {
        Ok(match m {
            Stored::F32(v) => DevMat::F32(dev.upload(what, v)?),
            Stored::Bf16(v) | Stored::F16(v) => DevMat::Bf16(dev.upload(what, v)?),
        })
    }

    fn push<'a>(&'a self, b: &mut LaunchArgs<'a>) {
        match self {
            DevMat::F32(s) => b.arg(s),
            DevMat::Bf16(s) => b.arg(s),
        };
    }
}

/// Biases and embeddings, float32, shared by both kernels.
struct Vectors {
    gate_b: CudaSlice<f32>,
    res_b: CudaSlice<f32>,
    skip_b: CudaSlice<f32>,
    relu_b: CudaSlice<f32>,
    out_b: CudaSlice<f32>,
    emb_c: CudaSlice<f32>,
    emb_p: CudaSlice<f32>,
    emb_b: CudaSlice<f32>,
}

impl Vectors {
    fn new(dev: &GpuDevice, w: &Weights) -> Result<Self, GpuError> {
        Ok(Self {
            gate_b: dev.upload("gate biases", &w.gate_b)?,
            res_b: dev.upload("residual biases", &w.res_b)?,
            skip_b: dev.upload("skip bias", &w.skip_b)?,
            relu_b: dev.upload("relu bias", &w.relu_b)?,
            out_b: dev.upload("output bias", &w.out_b)?,
            emb_c: dev.upload("embed_cur", &w.embed_cur)?,
            emb_p: dev.upload("embed_prev", &w.embed_prev)?,
            emb_b: dev.upload("embed_bias", &w.embed_bias)?,
        })
    }

    fn push<'a>(&'a self, b: &mut LaunchArgs<'a>) {
        b.arg(&self.gate_b).arg(&self.res_b).arg(&self.skip_b).arg(&self.relu_b).arg(&self.out_b);
        b.arg(&self.emb_c).arg(&self.emb_p).arg(&self.emb_b);
    }
}

/// What one kernel-1 launch produced.
#[derive(Debug, Clone)]
pub struct SingleRun {
    /// Mu-law codes, one per sample.
    pub samples: Vec<u8>,
    /// `[N, 256]` per-step probabilities, when asked for.
    pub probs: Option<Vec<f32>>,
    /// Kernel time from device events, ms.
    pub kernel_ms: f32,
    /// With profiling: cycles of thread 0 in block 0 per phase, summed over
    /// the launch ([`PROFILE_PHASES`] names them).
    pub phase_cycles: Option<[i64; 8]>,
    /// With profiling, `wavenet_chain`'s 32 counters ([`CHAIN_CLOCK`]).
    pub clock: Option<Vec<i64>>,
}

/// The phases of kernel 1's per-sample clock (`MARK(k)` in the kernel).
pub const PROFILE_PHASES_SMALL: [&str; 8] = [
    "embedding",
    "chain: gate (chain warps)",
    "chain: residual (chain warps)",
    "end of chain: block barrier (other warps: next sample's W_prev rows)",
    "cluster barrier 1",
    "d = 1 rows, ring stores",
    "barriers 2-4 (helpers' skip, relu, output layers)",
    "sampling",
];

/// What `wavenet_chain`'s clock counters hold ([`SingleRun::clock`]).
pub const CHAIN_CLOCK: &str = "cycles per sample of thread 0 (summed over the launch): [k < 16] chain block k from \
its x's arrival to the end of its layers; [16, 17] relu block waiting, working; [18, 19] output block waiting, \
working (output layer, sampling, sending x); [20 + i] block 0's layer i (i < 8); [28] the output block's \
sampling and sending x (within [19])";

/// The phases of `wavenet_single`'s per-sample clock (`MARK(k)` in the kernel).
pub const PROFILE_PHASES: [&str; 8] = [
    "embedding, histories, W_prev rows",
    "chain: gate and residual share (warp 0)",
    "chain: cluster barrier",
    "chain: sum over the cluster, block barrier",
    "skip: barrier and sum",
    "relu layer, barrier, gather",
    "output layer, barrier, gather",
    "sampling",
];

/// Kernel 1 compiled for one voice: one utterance per launch.
pub struct SingleStream {
    dev: Arc<GpuDevice>,
    func: CudaFunction,
    _module: Arc<CudaModule>,
    plan: SinglePlan,
    sizes: Sizes,
    mats: [DevMat; 6],
    vectors: Vectors,
}

impl SingleStream {
    /// Lays out `w` for `plan`, uploads it and compiles the kernel (needs
    /// compute capability 9.0 for thread-block clusters).
    pub fn new(dev: Arc<GpuDevice>, w: &Weights, plan: SinglePlan) -> Result<Self, GpuError> {
        if dev.capability.0 < 9 {
            return Err(GpuError::Unsupported {
                what: format!(
                    "kernel 1 needs thread-block clusters (compute capability 9.0; {} has {:?})",
                    dev.name, dev.capability
                ),
            });
        }
        let layout = if plan.layers_per_block > 0 {
            SingleLayout::chain_split(w)
        } else if plan.helpers > 0 {
            SingleLayout::chain_block(w, plan.bf16)
        } else {
            SingleLayout::new(w, plan.cluster, plan.bf16)?
        };
        let (module, func) = dev.load(&plan.source(&w.sizes), plan.entry(), plan.smem_bytes)?;
        if plan.cluster > 8 {
            func.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
                .map_err(driver("cuFuncSetAttribute(non-portable cluster size)"))?;
        }
        let mats = [
            DevMat::new(&dev, "W_cur slices", &layout.wc)?,
            DevMat::new(&dev, "W_prev slices", &layout.wp)?,
            DevMat::new(&dev, "W_res slices", &layout.wr)?,
            DevMat::new(&dev, "skip slices", &layout.wsk)?,
            DevMat::new(&dev, "relu slices", &layout.wz)?,
            DevMat::new(&dev, "output slices", &layout.wo)?,
        ];
        let vectors = Vectors::new(&dev, w)?;
        Ok(Self { dev, func, _module: module, plan, sizes: w.sizes.clone(), mats, vectors })
    }

    pub fn plan(&self) -> SinglePlan {
        self.plan
    }

    /// Generates `n` samples of `cond` in one launch, from silence, with
    /// the random state of `dv_synth::Rng::new(seed)`. With `forced`, the
    /// sample fed back at step t is `forced[t]` (teacher forcing, for parity
    /// checks); with `want_probs`, every step's distribution comes back.
    ///
    /// # Shapes
    /// * `cond`: `[F, ℓ·2r]` with `F · hop ≥ n`; `forced`: `[n]`
    pub fn run(
        &self,
        cond: &Conditioning,
        n: usize,
        sampling: GpuSampling,
        seed: u64,
        forced: Option<&[u8]>,
        want_probs: bool,
    ) -> Result<SingleRun, GpuError> {
        self.launch(cond, n, sampling, seed, forced, 0, want_probs, false)
    }

    /// [`SingleStream::run`] whose first `lead` samples are fed to the
    /// network and returned as silence (code 128), as the CPU renders a
    /// sentence's leading pause (`dv_speak::lead_samples`); they still draw
    /// from the generator.
    pub fn run_with_lead(
        &self,
        cond: &Conditioning,
        n: usize,
        sampling: GpuSampling,
        seed: u64,
        lead: usize,
    ) -> Result<SingleRun, GpuError> {
        self.launch(cond, n, sampling, seed, None, lead.min(n), false, false)
    }

    /// [`SingleStream::run`] with the per-phase clock of block 0 read back
    /// (the clock reads cost a little time themselves).
    pub fn run_profiled(
        &self,
        cond: &Conditioning,
        n: usize,
        sampling: GpuSampling,
        seed: u64,
    ) -> Result<SingleRun, GpuError> {
        self.launch(cond, n, sampling, seed, None, 0, false, true)
    }

    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        cond: &Conditioning,
        n: usize,
        sampling: GpuSampling,
        seed: u64,
        forced: Option<&[u8]>,
        lead: usize,
        want_probs: bool,
        profile: bool,
    ) -> Result<SingleRun, GpuError> {
        let sizes = &self.sizes;
        if cond.width() != sizes.conditioning_width() {
            return Err(GpuError::Shape {
                what: "conditioning width (ℓ·2r)",
                expected: sizes.conditioning_width(),
                got: cond.width(),
            });
        }
        if n == 0 || n > cond.frames() * sizes.hop || n > i32::MAX as usize {
            return Err(GpuError::Shape {
                what: "samples (at most frames × hop)",
                expected: cond.frames() * sizes.hop,
                got: n,
            });
        }
        if let Some(f) = forced {
            if f.len() != n {
                return Err(GpuError::Shape { what: "forced samples", expected: n, got: f.len() });
            }
        }
        let dev = &self.dev;
        let s = &dev.stream;
        let (_, rows) = sizes.history_offsets();
        let cond_d = dev.upload("conditioning", cond.data())?;
        let copies = if self.plan.helpers > 0 || self.plan.layers_per_block > 0 { 1 } else { self.plan.cluster };
        let hist = s.alloc_zeros::<f32>(copies * rows * sizes.residual).map_err(driver("cuMemAlloc(history)"))?;
        let mut rng = dev.upload("random state", &rng_state(seed))?;
        let mut out = dev.upload("samples", &vec![-1i32; n])?;
        let mut forced_d = forced.map(|f| dev.upload("forced samples", f)).transpose()?;
        let mut probs = if want_probs { Some(dev.upload("probabilities", &vec![f32::NAN; n * A])?) } else { None };
        let mut voiced = if sampling.reads_voicing() { Some(dev.upload("voicing", &voicing(cond))?) } else { None };
        let counters = if self.plan.layers_per_block > 0 { 32 } else { 8 };
        let mut prof = if profile { Some(dev.upload("phase clock", &vec![-1i64; counters])?) } else { None };
        let null = 0u64;
        let n_i = n as i32;
        let lead_i = lead.min(n) as i32;
        let cfg = LaunchConfig {
            grid_dim: (self.plan.cluster as u32, 1, 1),
            block_dim: (self.plan.threads as u32, 1, 1),
            shared_mem_bytes: self.plan.smem_bytes as u32,
        };
        let mut b = s.launch_builder(&self.func);
        for m in &self.mats {
            m.push(&mut b);
        }
        self.vectors.push(&mut b);
        b.arg(&cond_d).arg(&n_i).arg(&hist).arg(&sampling.mode).arg(&sampling.inv_tau);
        arg_or_null(&mut b, voiced.as_mut(), &null);
        b.arg(&lead_i).arg(&mut rng).arg(&mut out);
        arg_or_null(&mut b, forced_d.as_mut(), &null);
        arg_or_null(&mut b, probs.as_mut(), &null);
        arg_or_null(&mut b, prof.as_mut(), &null);
        b.record_kernel_launch(CUevent_flags::CU_EVENT_DEFAULT);
        // SAFETY: the arguments match `wavenet_single`'s parameters in order
        // and type (voicing: one byte per frame, null unless the mode reads
        // it); every buffer holds what the kernel indexes (sizes from
        // the same `Sizes` and plan that specialized the source); the
        // cluster size is compiled into the kernel and the grid is one cluster.
        let events = unsafe { b.launch(cfg) }.map_err(driver("cuLaunchKernel(wavenet_single)"))?;
        s.synchronize().map_err(driver("cuStreamSynchronize(wavenet_single)"))?;
        let kernel_ms = event_ms(events)?;
        let codes = s.clone_dtoh(&out).map_err(driver("cuMemcpyDtoH(samples)"))?;
        let unwritten = codes.iter().filter(|&&c| !(0..256).contains(&c)).count();
        if unwritten > 0 {
            return Err(GpuError::Unwritten { what: "wavenet_single samples", count: unwritten });
        }
        let probs = match probs {
            Some(p) => {
                let p = s.clone_dtoh(&p).map_err(driver("cuMemcpyDtoH(probabilities)"))?;
                let bad = p.iter().filter(|v| !v.is_finite()).count();
                if bad > 0 {
                    return Err(GpuError::Unwritten { what: "wavenet_single probabilities", count: bad });
                }
                Some(p)
            }
            None => None,
        };
        let clock = read_clock(s, prof, "kernel-1 phase clock")?;
        let (phase_cycles, clock) = match clock {
            Some(v) if self.plan.layers_per_block > 0 => (None, Some(v)),
            v => (v.map(|v| first8(&v)), None),
        };
        Ok(SingleRun { samples: codes.into_iter().map(|c| c as u8).collect(), probs, kernel_ms, phase_cycles, clock })
    }
}

/// What one kernel-2 launch produced.
#[derive(Debug, Clone)]
pub struct MultiRun {
    /// `[slots, steps]`: the code of each step, −1 where the slot was idle.
    pub samples: Vec<i32>,
    /// `[slots, steps, 256]` when asked for (NaN where idle).
    pub probs: Option<Vec<f32>>,
    pub kernel_ms: f32,
    /// With profiling: cycles of thread 0 in block 0 per phase, summed over
    /// the launch ([`PROFILE_PHASES_MULTI`] names them).
    pub phase_cycles: Option<[i64; 8]>,
    /// With profiling: of the products' cycles, those spent waiting for
    /// weight panels (and the barrier after) and those multiplying.
    pub panel_cycles: Option<[i64; 2]>,
}

/// The phases of kernel 2's per-step clock (`MARK(k)` in the kernel).
pub const PROFILE_PHASES_MULTI: [&str; 8] = [
    "embedding, first prefetch",
    "history rows, next prefetch",
    "dilated product",
    "gate",
    "residual product",
    "skip product",
    "relu and output layers",
    "sampling",
];

/// The phases of the tile kernel's per-step clock (its `MARK(k)`); its
/// [`MultiRun::panel_cycles`] are the chunk waits and the three products.
pub const PROFILE_PHASES_TILES: [&str; 8] = [
    "embedding, layer-0 rows",
    "weight-chunk waits (+ barrier)",
    "dilated product",
    "gate, next conditioning",
    "residual product, next layer's rows",
    "skip product",
    "relu and output layers",
    "sampling",
];

/// A stream joining kernel 2's slots.
#[derive(Debug, Clone, Copy)]
pub struct StreamStart {
    pub slot: usize,
    /// First conditioning row of this stream in the pool.
    pub cond_frame: usize,
    pub samples: usize,
    pub seed: u64,
    /// Leading samples fed to the network and returned as silence (code
    /// 128), as the CPU renders a sentence's leading pause
    /// (`dv_speak::lead_samples`; 0: every sample drawn is kept).
    pub lead: usize,
}

/// Kernel 2 compiled for one voice, with `slots` stream slots whose state
/// lives on the device between launches.
pub struct MultiStream {
    dev: Arc<GpuDevice>,
    func: CudaFunction,
    _module: Arc<CudaModule>,
    plan: MultiPlan,
    sizes: Sizes,
    slots: usize,
    pool_frames: usize,
    mats: [DevMat; 5],
    vectors: Vectors,
    pool: CudaSlice<f32>,
    /// Each pool row's voicing (1 voiced), read under voiced-only temperature.
    voiced: CudaSlice<u8>,
    /// Each slot's lead ([`StreamStart::lead`]).
    lead: CudaSlice<i32>,
    hist: CudaSlice<f32>,
    pos: CudaSlice<i32>,
    len: CudaSlice<i32>,
    y: CudaSlice<i32>,
    rng: CudaSlice<u64>,
    cond_off: CudaSlice<i64>,
    windows: Option<Windows>,
}

/// The conditioning pool of a [`MultiStream::with_windows`] stream set:
/// `base` frames the kernel may read but nobody writes (so that every slot's
/// offset stays at or past the pool's start), then one window of `frames`
/// frames per slot, refilled before each launch ([`MultiStream::set_windows`]).
#[derive(Debug, Clone, Copy)]
struct Windows {
    base: usize,
    frames: usize,
}

/// Frames a window must hold for a launch of `steps` samples starting at
/// any position: samples p … p + steps − 1 read frames p / hop …
/// (p + steps − 1) / hop, at most (steps − 1) / hop + 2 of them.
pub fn window_frames(steps: usize, hop: usize) -> usize {
    steps.saturating_sub(1) / hop.max(1) + 2
}

/// Where a pool stream's conditioning starts when the pool is as given.
enum PoolInit<'a> {
    /// Every stream's rows, uploaded once (laid out for the kernel here).
    Rows(&'a Conditioning),
    /// Zeros, `frames` of them: rows arrive with [`MultiStream::set_windows`].
    Zeros(usize),
}

impl MultiStream {
    /// `slots` is rounded up to whole blocks; `pool` is the conditioning
    /// every stream reads from (`[frames, ℓ·2r]`).
    pub fn new(
        dev: Arc<GpuDevice>,
        w: &Weights,
        plan: MultiPlan,
        slots: usize,
        pool: &Conditioning,
    ) -> Result<Self, GpuError> {
        if pool.width() != w.sizes.conditioning_width() {
            return Err(GpuError::Shape {
                what: "conditioning width (ℓ·2r)",
                expected: w.sizes.conditioning_width(),
                got: pool.width(),
            });
        }
        Self::build(dev, w, plan, slots, PoolInit::Rows(pool), None)
    }

    /// A stream set for serving, whose conditioning arrives launch by
    /// launch: each slot reads from its own window of
    /// [`window_frames`]`(steps, hop)` frames, which the caller fills before
    /// every launch of at most `steps` samples ([`MultiStream::set_windows`],
    /// rows laid out by [`MultiStream::pool_rows`]). A stream may be at most
    /// `max_stream_frames` frames long (the pool keeps that many unwritten
    /// frames ahead of the windows, so that no slot's offset is negative).
    /// `slots` is rounded up to whole blocks.
    pub fn with_windows(
        dev: Arc<GpuDevice>,
        w: &Weights,
        plan: MultiPlan,
        slots: usize,
        steps: usize,
        max_stream_frames: usize,
    ) -> Result<Self, GpuError> {
        if steps == 0 || max_stream_frames == 0 {
            return Err(GpuError::Shape { what: "steps per launch and frames per stream", expected: 1, got: 0 });
        }
        let slots = slots.max(1).div_ceil(plan.streams_per_block) * plan.streams_per_block;
        let windows = Windows { base: max_stream_frames, frames: window_frames(steps, w.sizes.hop) };
        let frames = windows.base + slots * windows.frames;
        Self::build(dev, w, plan, slots, PoolInit::Zeros(frames), Some(windows))
    }

    /// A stream's conditioning rows (`[F, ℓ·2r]`, the conditioning
    /// network's output) as `plan`'s kernel reads them from its pool: the
    /// gate biases added and the columns reordered for the column and
    /// warpgroup kernels, as they are for [`MultiStream::new`]'s pool.
    pub fn pool_rows(plan: &MultiPlan, w: &Weights, rows: &[f32]) -> Vec<f32> {
        if plan.kernel == MultiKernel::Cols {
            MultiLayout::cols_pool(w, rows)
        } else if plan.wgmma {
            MultiLayout::tiles_wg_pool(w, rows, plan.warps_n)
        } else {
            rows.to_vec()
        }
    }

    fn build(
        dev: Arc<GpuDevice>,
        w: &Weights,
        plan: MultiPlan,
        slots: usize,
        pool: PoolInit<'_>,
        windows: Option<Windows>,
    ) -> Result<Self, GpuError> {
        let sizes = w.sizes.clone();
        let pool_frames = match pool {
            PoolInit::Rows(c) => c.frames(),
            PoolInit::Zeros(f) => f,
        };
        // Kernel 2e's dead slots read their first frame (no branch per stream).
        if pool_frames == 0 {
            return Err(GpuError::Shape { what: "conditioning frames in the pool", expected: 1, got: 0 });
        }
        if plan.wgmma && dev.capability != (9, 0) {
            return Err(GpuError::Unsupported {
                what: format!(
                    "warpgroup MMAs (tiles-wg) on compute capability {}.{}: they need sm_90 (Hopper)",
                    dev.capability.0, dev.capability.1
                ),
            });
        }
        let slots = slots.max(1).div_ceil(plan.streams_per_block) * plan.streams_per_block;
        let (layout, source) = match plan.kernel {
            MultiKernel::Panels => (MultiLayout::new(w, true, plan.bf16), plan.source(&sizes)),
            MultiKernel::Tiles if plan.f16 || plan.wgmma => {
                let (layout, sc) = if plan.wgmma {
                    MultiLayout::tiles_wg(w, plan.f16, plan.wg_swizzle.then_some(plan.chunk_rows))
                } else {
                    MultiLayout::tiles_f16(w)
                };
                // Powers of two, exact in the decimal float syntax below.
                let defines = format!(
                    "#define SC_DIL {:e}f\n#define SC_RS {:e}f\n#define SC_RELU {:e}f\n#define SC_OUT {:e}f\n",
                    sc[0], sc[1], sc[2], sc[3]
                );
                (layout, format!("{defines}{}", plan.source(&sizes)))
            }
            MultiKernel::Tiles => (MultiLayout::tiles(w, plan.bf16), plan.source(&sizes)),
            MultiKernel::Cols => (MultiLayout::cols(w), plan.source(&sizes)),
        };
        let (module, func) = dev.load_for(&source, plan.entry(), plan.smem_bytes, &plan.arch(dev.capability))?;
        let mats = [
            DevMat::new(&dev, "dilated weights", &layout.dil)?,
            DevMat::new(&dev, "residual weights", &layout.res)?,
            DevMat::new(&dev, "skip weights", &layout.skip)?,
            DevMat::new(&dev, "relu weights", &layout.relu)?,
            DevMat::new(&dev, "output weights", &layout.out)?,
        ];
        let vectors = Vectors::new(&dev, w)?;
        let (_, rows) = sizes.history_offsets();
        let s = &dev.stream;
        let hist = s.alloc_zeros::<f32>(slots * rows * sizes.residual).map_err(driver("cuMemAlloc(histories)"))?;
        let pool_d = match pool {
            PoolInit::Rows(c) => dev.upload("conditioning pool", &Self::pool_rows(&plan, w, c.data()))?,
            PoolInit::Zeros(f) => {
                s.alloc_zeros::<f32>(f * sizes.conditioning_width()).map_err(driver("cuMemAlloc(conditioning pool)"))?
            }
        };
        let voiced = match pool {
            PoolInit::Rows(c) => dev.upload("voicing pool", &voicing(c))?,
            PoolInit::Zeros(f) => dev.upload("voicing pool", &vec![1u8; f])?,
        };
        let pos = s.alloc_zeros::<i32>(slots).map_err(driver("cuMemAlloc(positions)"))?;
        let lead = s.alloc_zeros::<i32>(slots).map_err(driver("cuMemAlloc(leads)"))?;
        let len = s.alloc_zeros::<i32>(slots).map_err(driver("cuMemAlloc(lengths)"))?;
        let y = dev.upload("last samples", &vec![128i32; 2 * slots])?;
        let rng = s.alloc_zeros::<u64>(4 * slots).map_err(driver("cuMemAlloc(random states)"))?;
        let cond_off = s.alloc_zeros::<i64>(slots).map_err(driver("cuMemAlloc(conditioning offsets)"))?;
        Ok(Self {
            dev,
            func,
            _module: module,
            plan,
            sizes,
            slots,
            pool_frames,
            mats,
            vectors,
            pool: pool_d,
            voiced,
            lead,
            hist,
            pos,
            len,
            y,
            rng,
            cond_off,
            windows,
        })
    }

    pub fn slots(&self) -> usize {
        self.slots
    }

    pub fn plan(&self) -> MultiPlan {
        self.plan
    }

    /// Streams join: each named slot restarts from silence with zero
    /// histories, its conditioning from `cond_frame` of the pool, and
    /// `dv_synth::Rng::new(seed)`. Other slots keep their state.
    pub fn start(&mut self, starts: &[StreamStart]) -> Result<(), GpuError> {
        let s = self.dev.stream.clone();
        let mut pos = s.clone_dtoh(&self.pos).map_err(driver("cuMemcpyDtoH(positions)"))?;
        let mut len = s.clone_dtoh(&self.len).map_err(driver("cuMemcpyDtoH(lengths)"))?;
        let mut lead = s.clone_dtoh(&self.lead).map_err(driver("cuMemcpyDtoH(leads)"))?;
        let mut y = s.clone_dtoh(&self.y).map_err(driver("cuMemcpyDtoH(last samples)"))?;
        let mut rng = s.clone_dtoh(&self.rng).map_err(driver("cuMemcpyDtoH(random states)"))?;
        let mut off = s.clone_dtoh(&self.cond_off).map_err(driver("cuMemcpyDtoH(conditioning offsets)"))?;
        let (_, rows) = self.sizes.history_offsets();
        let per_slot = rows * self.sizes.residual;
        for st in starts {
            if st.slot >= self.slots {
                return Err(GpuError::Shape { what: "stream slot", expected: self.slots, got: st.slot });
            }
            let frames_needed = st.samples.div_ceil(self.sizes.hop);
            match self.windows {
                // The stream reads its window; its offset is set before each launch.
                Some(win) => {
                    if frames_needed > win.base || st.cond_frame + 1 > self.pool_frames {
                        return Err(GpuError::Shape {
                            what: "conditioning frames of a windowed stream (past the longest allowed)",
                            expected: win.base,
                            got: frames_needed,
                        });
                    }
                }
                None => {
                    if st.cond_frame + frames_needed > self.pool_frames || st.samples > i32::MAX as usize {
                        return Err(GpuError::Shape {
                            what: "conditioning frames of a stream (past the pool's end)",
                            expected: self.pool_frames,
                            got: st.cond_frame + frames_needed,
                        });
                    }
                }
            }
            pos[st.slot] = 0;
            len[st.slot] = st.samples as i32;
            lead[st.slot] = st.lead.min(st.samples) as i32;
            y[2 * st.slot] = 128;
            y[2 * st.slot + 1] = 128;
            rng[4 * st.slot..4 * st.slot + 4].copy_from_slice(&rng_state(st.seed));
            off[st.slot] = (st.cond_frame * self.sizes.conditioning_width()) as i64;
            s.memset_zeros(&mut self.hist.slice_mut(st.slot * per_slot..(st.slot + 1) * per_slot))
                .map_err(driver("cuMemsetD8(history)"))?;
        }
        s.memcpy_htod(&pos, &mut self.pos).map_err(driver("cuMemcpyHtoD(positions)"))?;
        s.memcpy_htod(&len, &mut self.len).map_err(driver("cuMemcpyHtoD(lengths)"))?;
        s.memcpy_htod(&lead, &mut self.lead).map_err(driver("cuMemcpyHtoD(leads)"))?;
        s.memcpy_htod(&y, &mut self.y).map_err(driver("cuMemcpyHtoD(last samples)"))?;
        s.memcpy_htod(&rng, &mut self.rng).map_err(driver("cuMemcpyHtoD(random states)"))?;
        s.memcpy_htod(&off, &mut self.cond_off).map_err(driver("cuMemcpyHtoD(conditioning offsets)"))?;
        Ok(())
    }

    /// Frames per slot window (`None` unless made by
    /// [`MultiStream::with_windows`]).
    pub fn window_frames(&self) -> Option<usize> {
        self.windows.map(|w| w.frames)
    }

    /// Fills the windows of slots `0 .. first.len()` and points each slot's
    /// conditioning at its own: `rows` is `[first.len(), window_frames,
    /// ℓ·2r]` in the kernel's pool layout ([`MultiStream::pool_rows`]), and
    /// row k of slot s's window holds frame `first[s] + k` of its stream
    /// (rows past a stream's end are never read while it is live). A launch
    /// of `steps` (as given to [`MultiStream::with_windows`]) from position p
    /// must find frame p / hop at `first`. Slots past `first.len()` keep
    /// their windows and offsets. Two copies to the device (three with
    /// [`MultiStream::set_windows_voiced`]); here every frame counts as voiced.
    pub fn set_windows(&mut self, rows: &[f32], first: &[usize]) -> Result<(), GpuError> {
        self.set_windows_voiced(rows, None, first)
    }

    /// [`MultiStream::set_windows`] with each window row's voicing
    /// (`[first.len(), window_frames]`, 1 voiced), which voiced-only
    /// temperature reads; `None` marks every row voiced.
    pub fn set_windows_voiced(&mut self, rows: &[f32], voiced: Option<&[u8]>, first: &[usize]) -> Result<(), GpuError> {
        let Some(win) = self.windows else {
            return Err(GpuError::Unsupported {
                what: "conditioning windows on a stream set made with a whole pool (MultiStream::new)".into(),
            });
        };
        let width = self.sizes.conditioning_width();
        let n = first.len();
        if n > self.slots {
            return Err(GpuError::Shape { what: "slots of the windows", expected: self.slots, got: n });
        }
        if rows.len() != n * win.frames * width {
            return Err(GpuError::Shape {
                what: "window rows [slots, window frames, ℓ·2r]",
                expected: n * win.frames * width,
                got: rows.len(),
            });
        }
        if let Some(v) = voiced {
            if v.len() != n * win.frames {
                return Err(GpuError::Shape {
                    what: "window voicing [slots, window frames]",
                    expected: n * win.frames,
                    got: v.len(),
                });
            }
        }
        if n == 0 {
            return Ok(());
        }
        let mut off = Vec::with_capacity(n);
        for (slot, &f) in first.iter().enumerate() {
            if f > win.base {
                return Err(GpuError::Shape {
                    what: "first frame of a window (past the longest stream)",
                    expected: win.base,
                    got: f,
                });
            }
            // At or past the pool's start: a dead slot reads frame 0 of its offset.
            off.push(((win.base + slot * win.frames - f) * width) as i64);
        }
        let s = self.dev.stream.clone();
        let start = win.base * width;
        let mut dst = self.pool.slice_mut(start..start + rows.len());
        s.memcpy_htod(rows, &mut dst).map_err(driver("cuMemcpyHtoD(conditioning windows)"))?;
        let ones;
        let v = match voiced {
            Some(v) => v,
            None => {
                ones = vec![1u8; n * win.frames];
                &ones
            }
        };
        let mut dst = self.voiced.slice_mut(win.base..win.base + v.len());
        s.memcpy_htod(v, &mut dst).map_err(driver("cuMemcpyHtoD(window voicing)"))?;
        let mut dst = self.cond_off.slice_mut(0..n);
        s.memcpy_htod(&off, &mut dst).map_err(driver("cuMemcpyHtoD(conditioning offsets)"))?;
        Ok(())
    }

    /// Advances every live slot by up to `steps` samples in one launch.
    /// `forced` (`[slots, steps]`) teacher-forces, `want_probs` returns
    /// every step's distribution (both for parity checks).
    pub fn advance(
        &mut self,
        steps: usize,
        sampling: GpuSampling,
        forced: Option<&[u8]>,
        want_probs: bool,
    ) -> Result<MultiRun, GpuError> {
        self.launch(self.slots, steps, sampling, forced, want_probs, false)
    }

    /// [`MultiStream::advance`] over the first `slots` slots only (rounded
    /// up to whole blocks): the launch has only their blocks, so it costs
    /// what they cost; the slots past them neither move nor are read. A
    /// server packs its busy slots low and launches over them. The samples
    /// are still `[slots(), steps]`, −1 past the launched blocks.
    pub fn advance_first(&mut self, slots: usize, steps: usize, sampling: GpuSampling) -> Result<MultiRun, GpuError> {
        let n = slots.clamp(1, self.slots).div_ceil(self.plan.streams_per_block) * self.plan.streams_per_block;
        let mut run = self.launch(n.min(self.slots), steps, sampling, None, false, false)?;
        run.samples.resize(self.slots * steps, -1);
        Ok(run)
    }

    /// [`MultiStream::advance`] with block 0's per-phase clock read back.
    pub fn advance_profiled(&mut self, steps: usize, sampling: GpuSampling) -> Result<MultiRun, GpuError> {
        self.launch(self.slots, steps, sampling, None, false, true)
    }

    /// One launch over slots `0 .. launched` (a whole number of blocks);
    /// `samples` (and `probs`) come back for those slots.
    fn launch(
        &mut self,
        launched: usize,
        steps: usize,
        sampling: GpuSampling,
        forced: Option<&[u8]>,
        want_probs: bool,
        profile: bool,
    ) -> Result<MultiRun, GpuError> {
        if steps == 0 || self.slots.saturating_mul(steps) > i32::MAX as usize {
            return Err(GpuError::Shape { what: "steps per launch", expected: 1, got: steps });
        }
        if launched == 0 || launched > self.slots || !launched.is_multiple_of(self.plan.streams_per_block) {
            return Err(GpuError::Shape { what: "launched slots (whole blocks)", expected: self.slots, got: launched });
        }
        if let Some(f) = forced {
            if f.len() != self.slots * steps {
                return Err(GpuError::Shape {
                    what: "forced samples [slots, steps]",
                    expected: self.slots * steps,
                    got: f.len(),
                });
            }
        }
        let dev = self.dev.clone();
        let s = &dev.stream;
        let mut out = dev.upload("samples", &vec![-1i32; launched * steps])?;
        let mut forced_d = forced.map(|f| dev.upload("forced samples", f)).transpose()?;
        let mut probs =
            if want_probs { Some(dev.upload("probabilities", &vec![f32::NAN; self.slots * steps * A])?) } else { None };
        let mut prof = if profile { Some(dev.upload("phase clock", &[-1i64; 10])?) } else { None };
        let null = 0u64;
        let steps_i = steps as i32;
        let cfg = LaunchConfig {
            grid_dim: ((launched / self.plan.streams_per_block) as u32, 1, 1),
            block_dim: (self.plan.threads as u32, 1, 1),
            shared_mem_bytes: self.plan.smem_bytes as u32,
        };
        let mut b = s.launch_builder(&self.func);
        for m in &self.mats {
            m.push(&mut b);
        }
        self.vectors.push(&mut b);
        b.arg(&self.pool).arg(&mut self.hist).arg(&mut self.pos).arg(&self.len).arg(&mut self.y);
        b.arg(&mut self.rng).arg(&self.cond_off).arg(&steps_i).arg(&sampling.mode).arg(&sampling.inv_tau);
        b.arg(&self.voiced).arg(&self.lead).arg(&mut out);
        arg_or_null(&mut b, forced_d.as_mut(), &null);
        arg_or_null(&mut b, probs.as_mut(), &null);
        arg_or_null(&mut b, prof.as_mut(), &null);
        b.record_kernel_launch(CUevent_flags::CU_EVENT_DEFAULT);
        // SAFETY: the arguments match `wavenet_multi`'s (and `wavenet_tiles`') parameters in order
        // and type; the slot arrays hold `slots` entries (a whole number of
        // blocks), the histories `slots × HIST_ROWS × r`, and every stream's
        // conditioning was checked against the pool in `start`; the voicing pool
        // holds one byte per pool row.
        let events = unsafe { b.launch(cfg) }.map_err(driver("cuLaunchKernel(wavenet_multi)"))?;
        s.synchronize().map_err(driver("cuStreamSynchronize(wavenet_multi)"))?;
        let kernel_ms = event_ms(events)?;
        let samples = s.clone_dtoh(&out).map_err(driver("cuMemcpyDtoH(samples)"))?;
        let probs = match probs {
            Some(p) => Some(s.clone_dtoh(&p).map_err(driver("cuMemcpyDtoH(probabilities)"))?),
            None => None,
        };
        let phase_cycles = read_clock(s, prof, "wavenet_multi phase clock")?;
        Ok(MultiRun {
            samples,
            probs,
            kernel_ms,
            phase_cycles: phase_cycles.as_ref().map(|v| first8(v)),
            panel_cycles: phase_cycles.as_ref().map(|v| [v[8], v[9]]),
        })
    }

    /// Samples each slot still has to generate.
    pub fn remaining(&self) -> Result<Vec<usize>, GpuError> {
        let s = &self.dev.stream;
        let pos = s.clone_dtoh(&self.pos).map_err(driver("cuMemcpyDtoH(positions)"))?;
        let len = s.clone_dtoh(&self.len).map_err(driver("cuMemcpyDtoH(lengths)"))?;
        Ok(pos.iter().zip(&len).map(|(&p, &l)| (l - p).max(0) as usize).collect())
    }
}
