//! [`GpuConditioner`]: the conditioning network on the GPU for a server,
//! and [`Projector`], its last layer run per launch.
//!
//! A server that samples thousands of streams cannot run the conditioning
//! network on its CPU cores (about 1.4 M multiply-adds per frame, 256
//! frames per second per stream), nor send each launch's conditioning rows
//! over PCIe (ℓ·2r = 2560 floats per frame for 20x64x128). So the QRNN
//! layers run here, batched over the sentences that arrive together
//! ([`GpuConditioner::run`]: two products and a fo-pooling per layer), and
//! leave each sentence's u (2H floats per frame, 10x fewer than L) in a
//! device arena at frames the caller allocated; each launch's windows are
//! then projected from the arena straight into the pipeline's conditioning
//! pool ([`Projector`], from [`crate::Pipelined::submit_projected`]), so
//! nothing per frame crosses PCIe after a sentence's features.
//!
//! The kernels (`kernels/conditioning.cu`) compute what
//! [`CondLayout::u_reference`] and [`CondLayout::project_reference`]
//! compute; [`GpuConditioner::check`] compares a voice's golden example
//! with its stored conditioning before a server uses it.

use std::sync::Arc;

use cudarc::driver::sys::{CUevent_flags, CUfunction_attribute};
use cudarc::driver::{CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, LaunchConfig};
use cudarc::driver::{PinnedHostSlice, PushKernelArg};

use super::{driver, GpuDevice};
use crate::error::GpuError;
use crate::model::CondLayout;

const SOURCE: &str = include_str!("../../kernels/conditioning.cu");

/// The kernels' tile (`GBM` × `GBN` outputs per block, 256 threads).
const TILE: usize = 128;

/// The source of the conditioning kernels (for NVRTC checks).
pub fn conditioning_source() -> &'static str {
    SOURCE
}

/// The address of a device buffer, for kernels handed raw pointers (no
/// cross-stream tracking: the callers order their uses).
fn raw(s: &CudaSlice<f32>, stream: &CudaStream) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

/// The projection of arena rows into conditioning windows, for one
/// [`crate::Pipelined`]: the weights in pool order and the arena's address.
#[derive(Clone)]
pub struct Projector {
    func: CudaFunction,
    _module: Arc<CudaModule>,
    _weights: Arc<(CudaSlice<f32>, CudaSlice<f32>, CudaSlice<f32>)>,
    arena: u64,
    proj: u64,
    proj_b: u64,
    /// u's width (K) and the pool's (N).
    pub u_width: usize,
    pub out: usize,
    /// Frames the arena holds.
    pub arena_frames: usize,
    /// Dynamic shared memory per block ([`GpuConditioner::exclusive_of`]).
    smem: usize,
}

impl Projector {
    /// Queues on `stream`: rows `base + s·wf + k` of `pool` (`[.., out]`)
    /// for slots `s < slots` from `meta` (`[slots, 3]`: the slot's u offset
    /// in the arena in floats or −1 for idle, its frames, its window's first
    /// frame).
    pub(crate) fn launch(
        &self,
        stream: &CudaStream,
        pool: &mut CudaSlice<f32>,
        meta: &CudaSlice<i64>,
        base: usize,
        slots: usize,
        wf: usize,
    ) -> Result<(), GpuError> {
        let rows = slots * wf;
        if rows == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig {
            grid_dim: (rows.div_ceil(TILE) as u32, self.out.div_ceil(TILE) as u32, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: self.smem as u32,
        };
        let (base_i, slots_i, wf_i, k_i, n_i) =
            (base as i64, slots as i32, wf as i32, self.u_width as i32, self.out as i32);
        let mut b = stream.launch_builder(&self.func);
        b.arg(&self.arena).arg(pool).arg(meta).arg(&base_i).arg(&slots_i).arg(&wf_i).arg(&k_i).arg(&n_i);
        b.arg(&self.proj).arg(&self.proj_b);
        // SAFETY: the arguments match `cond_project`'s in order and type; the pool holds rows up
        // to base + slots·wf of `out` floats (the caller's windows), meta 3·slots values whose
        // offsets address whole u rows inside the arena (checked by the caller against
        // `arena_frames`), the weights `out × u_width` and `out` floats, alive while `_weights` is.
        unsafe { b.launch(cfg) }.map_err(driver("cuLaunchKernel(cond_project)"))?;
        Ok(())
    }
}

/// The conditioning network of one voice on one GPU, with its own stream,
/// batch buffers and the arena of u rows.
pub struct GpuConditioner {
    dev: Arc<GpuDevice>,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    gemm: CudaFunction,
    fo_pool: CudaFunction,
    project: CudaFunction,
    hidden: usize,
    input_dim: usize,
    dims: Vec<usize>,
    gates: Vec<CudaSlice<f32>>,
    biases: Vec<CudaSlice<f32>>,
    weights: Arc<(CudaSlice<f32>, CudaSlice<f32>, CudaSlice<f32>)>,
    u_width: usize,
    out: usize,
    batch_frames: usize,
    max_batch: usize,
    x: CudaSlice<f32>,
    g: CudaSlice<f32>,
    y: [CudaSlice<f32>; 2],
    stage: PinnedHostSlice<f32>,
    seq_host: PinnedHostSlice<i64>,
    seq: CudaSlice<i64>,
    done: CudaEvent,
    /// Timing marks: before the upload, after it, after each layer's product and pooling.
    marks: Vec<CudaEvent>,
    phases: CondPhases,
    arena_frames: usize,
    arena: u64,
    smem: usize,
}

/// Where a [`GpuConditioner`]'s batches spent their time, seconds summed
/// over every batch it ran (the device's parts by events on its stream, so
/// they include any wait for multiprocessors the sampling kernel holds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CondPhases {
    /// Host: copying the batch's features into page-locked memory.
    pub staging: f64,
    /// Device: the features' upload, the QRNN layers' products, their fo-pooling.
    pub upload: f64,
    pub products: f64,
    pub pooling: f64,
}

impl GpuConditioner {
    /// `layout` on `dev`: batches of at most `batch_frames` frames and
    /// `max_batch` sentences, an arena of `arena_frames` u rows.
    pub fn new(
        dev: Arc<GpuDevice>,
        layout: &CondLayout,
        batch_frames: usize,
        max_batch: usize,
        arena_frames: usize,
    ) -> Result<Self, GpuError> {
        let h = layout.hidden;
        if layout.gates.is_empty() {
            return Err(GpuError::Unsupported { what: "a conditioning network without QRNN layers on the GPU".into() });
        }
        if h == 0 || h > 1024 {
            return Err(GpuError::Unsupported { what: format!("H = {h} QRNN units (one thread each: 1 to 1024)") });
        }
        if batch_frames == 0 || max_batch == 0 || arena_frames == 0 {
            return Err(GpuError::Shape {
                what: "conditioning batch frames, sentences and arena frames",
                expected: 1,
                got: 0,
            });
        }
        let (module, gemm) = dev.load(SOURCE, "cond_gemm", 0)?;
        let fo_pool = module.load_function("cond_fo_pool").map_err(driver("cuModuleGetFunction(cond_fo_pool)"))?;
        let project = module.load_function("cond_project").map_err(driver("cuModuleGetFunction(cond_project)"))?;
        let stream = dev.ctx.new_stream().map_err(driver("cuStreamCreate(conditioning)"))?;
        let up = |what: &'static str, v: &[f32]| -> Result<CudaSlice<f32>, GpuError> {
            if v.is_empty() {
                return Err(GpuError::Shape { what, expected: 1, got: 0 });
            }
            stream.clone_htod(v).map_err(driver("cuMemcpyHtoD(conditioning weights)"))
        };
        let gates = layout.gates.iter().map(|g| up("cond.qrnn gates", g)).collect::<Result<Vec<_>, _>>()?;
        let biases = layout.biases.iter().map(|b| up("cond.qrnn biases", b)).collect::<Result<Vec<_>, _>>()?;
        let dims = layout.gates.iter().map(|g| g.len() / (12 * h)).collect();
        let out = layout.proj_b.len();
        let zero = |what: &'static str, n: usize| -> Result<CudaSlice<f32>, GpuError> {
            stream.alloc_zeros::<f32>(n.max(1)).map_err(|e| GpuError::Driver { call: what, reason: e.to_string() })
        };
        let arena = zero("cuMemAlloc(conditioning arena)", arena_frames * layout.u_width)?;
        let weights = Arc::new((up("cond.proj.weight", &layout.proj)?, up("cond.proj.bias", &layout.proj_b)?, arena));
        let x = zero("cuMemAlloc(conditioning features)", batch_frames * layout.input_dim)?;
        let g = zero("cuMemAlloc(QRNN gate products)", batch_frames * 12 * h)?;
        let y = [
            zero("cuMemAlloc(QRNN outputs)", batch_frames * 2 * h)?,
            zero("cuMemAlloc(QRNN outputs)", batch_frames * 2 * h)?,
        ];
        // SAFETY: page-locked host buffers, written by the host before every copy that reads them.
        let stage = unsafe { dev.ctx.alloc_pinned::<f32>(batch_frames * layout.input_dim) }
            .map_err(driver("cuMemHostAlloc(features)"))?;
        // SAFETY: as `stage`: written by the host before every copy that reads it.
        let seq_host =
            unsafe { dev.ctx.alloc_pinned::<i64>(6 * max_batch) }.map_err(driver("cuMemHostAlloc(sentences)"))?;
        let seq = stream.alloc_zeros::<i64>(6 * max_batch).map_err(driver("cuMemAlloc(sentences)"))?;
        let done = dev.ctx.new_event(Some(CUevent_flags::CU_EVENT_BLOCKING_SYNC)).map_err(driver("cuEventCreate"))?;
        let marks = (0..2 + 2 * layout.gates.len())
            .map(|_| dev.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(driver("cuEventCreate")))
            .collect::<Result<Vec<_>, _>>()?;
        stream.synchronize().map_err(driver("cuStreamSynchronize(conditioning set-up)"))?;
        let arena_ptr = raw(&weights.2, &stream);
        Ok(Self {
            dev,
            stream,
            module,
            gemm,
            fo_pool,
            project,
            hidden: h,
            input_dim: layout.input_dim,
            dims,
            gates,
            biases,
            weights,
            u_width: layout.u_width,
            out,
            batch_frames,
            max_batch,
            x,
            g,
            y,
            stage,
            seq_host,
            seq,
            done,
            marks,
            phases: CondPhases::default(),
            arena_frames,
            arena: arena_ptr,
            smem: 0,
        })
    }

    /// Makes every block of these kernels ask for enough shared memory
    /// that none fits on a multiprocessor beside a block of `block_smem`
    /// bytes (the sampling kernel's): they then run on the multiprocessors
    /// the sampling kernel leaves free instead of stretching its per-sample
    /// critical path. Applies to projectors made after it.
    pub fn exclusive_of(&mut self, block_smem: usize) -> Result<(), GpuError> {
        let per_sm = self.dev.shared_memory_per_multiprocessor();
        // 1 KB per block is the driver's; the GEMM's own tiles are 8 KB of static memory.
        let smem = (per_sm + 2048).saturating_sub(block_smem).min(self.dev.shared_memory_limit() - 8192);
        for f in [&self.gemm, &self.fo_pool, &self.project] {
            f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
                .map_err(driver("cuFuncSetAttribute(dynamic shared memory)"))?;
        }
        self.smem = smem;
        Ok(())
    }

    pub fn arena_frames(&self) -> usize {
        self.arena_frames
    }

    pub fn batch_frames(&self) -> usize {
        self.batch_frames
    }

    pub fn max_batch(&self) -> usize {
        self.max_batch
    }

    pub fn input_dim(&self) -> usize {
        self.input_dim
    }

    /// The projection for a pipeline on the same device.
    pub fn projector(&self) -> Projector {
        Projector {
            func: self.project.clone(),
            _module: self.module.clone(),
            _weights: self.weights.clone(),
            arena: self.arena,
            proj: raw(&self.weights.0, &self.stream),
            proj_b: raw(&self.weights.1, &self.stream),
            u_width: self.u_width,
            out: self.out,
            arena_frames: self.arena_frames,
            smem: self.smem,
        }
    }

    /// Runs the network over `sentences` (each `[F_b, input_dim]`, F_b ≥ 1),
    /// writing sentence b's u rows at arena frames `at[b] .. at[b] + F_b`;
    /// returns when they are there.
    pub fn run(&mut self, sentences: &[&[f32]], at: &[usize]) -> Result<(), GpuError> {
        let (d0, h) = (self.input_dim, self.hidden);
        if sentences.is_empty() {
            return Ok(());
        }
        if sentences.len() != at.len() || sentences.len() > self.max_batch {
            return Err(GpuError::Shape {
                what: "sentences of a conditioning batch (one arena frame each, at most the batch's)",
                expected: at.len().min(self.max_batch),
                got: sentences.len(),
            });
        }
        let mut total = 0usize;
        let staging = std::time::Instant::now();
        {
            let seq = self.seq_host.as_mut_slice().map_err(driver("cuEventSynchronize(sentences)"))?;
            for (b, (s, &a)) in sentences.iter().zip(at).enumerate() {
                let f = s.len() / d0;
                if f == 0 || s.len() != f * d0 {
                    return Err(GpuError::Shape {
                        what: "conditioning features (whole frames, at least one)",
                        expected: f.max(1) * d0,
                        got: s.len(),
                    });
                }
                if a + f > self.arena_frames {
                    return Err(GpuError::Shape {
                        what: "arena frames of a sentence",
                        expected: self.arena_frames,
                        got: a + f,
                    });
                }
                // Intermediate layers write their own rows; the last one the arena's.
                seq[3 * b..3 * b + 3].copy_from_slice(&[total as i64, f as i64, total as i64]);
                let k = 3 * (self.max_batch + b);
                seq[k..k + 3].copy_from_slice(&[total as i64, f as i64, a as i64]);
                total += f;
            }
            if total > self.batch_frames {
                return Err(GpuError::Shape {
                    what: "frames of a conditioning batch",
                    expected: self.batch_frames,
                    got: total,
                });
            }
            let stage = self.stage.as_mut_slice().map_err(driver("cuEventSynchronize(features)"))?;
            let mut o = 0;
            for s in sentences {
                stage[o..o + s.len()].copy_from_slice(s);
                o += s.len();
            }
        }
        self.phases.staging += staging.elapsed().as_secs_f64();
        let s = self.stream.clone();
        let mark = |e: &CudaEvent| e.record(&s).map_err(driver("cuEventRecord(conditioning phases)"));
        mark(&self.marks[0])?;
        {
            let stage = self.stage.as_slice().map_err(driver("cuEventSynchronize(features)"))?;
            s.memcpy_htod(&stage[..total * d0], &mut self.x.slice_mut(0..total * d0))
                .map_err(driver("cuMemcpyHtoDAsync(features)"))?;
            let seq = self.seq_host.as_slice().map_err(driver("cuEventSynchronize(sentences)"))?;
            s.memcpy_htod(seq, &mut self.seq).map_err(driver("cuMemcpyHtoDAsync(sentences)"))?;
        }
        mark(&self.marks[1])?;
        let (m, n) = (total as i32, (12 * h) as i32);
        let nb = sentences.len();
        let layers = self.gates.len();
        for k in 0..layers {
            let kd = self.dims[k] as i32;
            let cfg = LaunchConfig {
                grid_dim: (total.div_ceil(TILE) as u32, (12 * h).div_ceil(TILE) as u32, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: self.smem as u32,
            };
            {
                let (input, gbuf) = (if k == 0 { &self.x } else { &self.y[(k - 1) % 2] }, &mut self.g);
                let mut b = s.launch_builder(&self.gemm);
                b.arg(input).arg(gbuf).arg(&m).arg(&n).arg(&kd).arg(&self.gates[k]);
                // SAFETY: `cond_gemm(A, C, M, N, K, W)`: A holds M rows of K (the features or the
                // layer before's [M, 2H]), C M rows of 12H, W 12H rows of K.
                unsafe { b.launch(cfg) }.map_err(driver("cuLaunchKernel(cond_gemm)"))?;
            }
            mark(&self.marks[2 + 2 * k])?;
            let last = k + 1 == layers;
            let cfg = LaunchConfig {
                grid_dim: (nb as u32, 2, 1),
                block_dim: (h as u32, 1, 1),
                shared_mem_bytes: self.smem as u32,
            };
            let ldo = (2 * h) as i64;
            let h_i = h as i32;
            let seq = self.seq.slice(if last { 3 * self.max_batch..3 * self.max_batch + 3 * nb } else { 0..3 * nb });
            let mut b = s.launch_builder(&self.fo_pool);
            b.arg(&self.g).arg(&self.biases[k]).arg(&seq);
            if last {
                b.arg(&self.arena);
            } else {
                b.arg(&mut self.y[k % 2]);
            }
            b.arg(&ldo).arg(&h_i);
            // SAFETY: `cond_fo_pool(g, bias, seq, out, ldo, H)`: g holds the batch's rows of 12H,
            // bias 6H, seq 3 values per sentence whose rows lie in the batch (and, for the last
            // layer, in the arena: checked above); out rows are 2H wide.
            unsafe { b.launch(cfg) }.map_err(driver("cuLaunchKernel(cond_fo_pool)"))?;
            mark(&self.marks[3 + 2 * k])?;
        }
        self.done.record(&s).map_err(driver("cuEventRecord(conditioning)"))?;
        self.done.synchronize().map_err(driver("cuEventSynchronize(conditioning)"))?;
        let ms = |a: usize, b: usize| self.marks[a].elapsed_ms(&self.marks[b]).map_err(driver("cuEventElapsedTime"));
        self.phases.upload += ms(0, 1)? as f64 / 1e3;
        for k in 0..layers {
            // Layer k's product starts where the upload (k = 0) or layer k - 1's pooling ended.
            self.phases.products += ms(1 + 2 * k, 2 + 2 * k)? as f64 / 1e3;
            self.phases.pooling += ms(2 + 2 * k, 3 + 2 * k)? as f64 / 1e3;
        }
        Ok(())
    }

    /// Where the batches run so far spent their time.
    pub fn phases(&self) -> CondPhases {
        self.phases
    }

    /// The projected rows (`[frames, out]`, pool order) of arena frames
    /// `at .. at + frames`, through the same kernel as the launches'
    /// windows: for checks.
    pub fn project_rows(&mut self, at: usize, frames: usize) -> Result<Vec<f32>, GpuError> {
        if frames == 0 || at + frames > self.arena_frames {
            return Err(GpuError::Shape {
                what: "arena frames to project",
                expected: self.arena_frames,
                got: at + frames,
            });
        }
        let s = self.stream.clone();
        let meta =
            s.clone_htod(&[(at * self.u_width) as i64, frames as i64, 0]).map_err(driver("cuMemcpyHtoD(meta)"))?;
        let mut rows = s.alloc_zeros::<f32>(frames * self.out).map_err(driver("cuMemAlloc(projected rows)"))?;
        self.projector().launch(&s, &mut rows, &meta, 0, 1, frames)?;
        let v = s.clone_dtoh(&rows).map_err(driver("cuMemcpyDtoH(projected rows)"))?;
        Ok(v)
    }

    /// Runs `features` (`[F, input_dim]`) through the network at arena
    /// frame 0 and projects it: the largest |difference| from `expected`
    /// (`[F, out]` in pool order; infinite for a NaN).
    pub fn check(&mut self, features: &[f32], expected: &[f32]) -> Result<f64, GpuError> {
        let f = features.len() / self.input_dim.max(1);
        if expected.len() != f * self.out {
            return Err(GpuError::Shape {
                what: "expected conditioning rows",
                expected: f * self.out,
                got: expected.len(),
            });
        }
        self.run(&[features], &[0])?;
        let got = self.project_rows(0, f)?;
        let rel = |(&g, &e): (&f32, &f32)| {
            let d = f64::from((g - e).abs());
            if d.is_nan() {
                f64::INFINITY
            } else {
                d
            }
        };
        Ok(got.iter().zip(expected).map(rel).fold(0.0, f64::max))
    }

    pub fn device(&self) -> &Arc<GpuDevice> {
        &self.dev
    }
}
