//! The CUDA half: `kernels/mas.cu` and `kernels/ctc_viterbi.cu`, compiled at
//! run time with NVRTC and launched through `cudarc`. The only module with
//! `unsafe`; every driver error becomes an [`AlignError`] naming the call.
//!
//! The driver (`libcuda.so.1`) and NVRTC (`libnvrtc.so.13` and its
//! `libnvrtc-builtins`) are loaded with `dlopen` when [`GpuAligner::new`]
//! runs, so this crate builds and its CPU half runs on machines without CUDA;
//! [`GpuAligner::new`] checks both libraries first and returns
//! [`AlignError::CudaUnavailable`] instead of letting `cudarc` panic.
//!
//! Kernels are compiled for the device's own virtual architecture
//! (`compute_XY` from its compute capability) with `--fmad=false
//! --ftz=false --prec-div=true --prec-sqrt=true`, so every add is a correctly
//! rounded IEEE f32 add and subnormals are kept, as on the CPU.
use std::sync::Arc;

use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags, CUfunction_attribute};
use cudarc::driver::PushKernelArg;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DriverError, LaunchConfig};
use cudarc::nvrtc::{self, CompileError, CompileOptions};

use crate::mas::{self, MasLen, MasShape};
use crate::viterbi::{self, CtcAlignment, CtcLen, CtcShape};
use crate::AlignError;

const MAS_SRC: &str = include_str!("../kernels/mas.cu");
const CTC_SRC: &str = include_str!("../kernels/ctc_viterbi.cu");
/// Frames per shared-memory tile (`MAS_TILE` in `kernels/mas.cu`).
const MAS_TILE: usize = 8;
/// Frames per backtrack window (`MAS_BT` in `kernels/mas.cu`).
const MAS_BT: usize = 64;
/// "No NaN found" in the MAS status word (`MAS_NONE`).
const MAS_NONE: i32 = i32::MAX;
/// Longest text the MAS kernel is built for (at most two text positions per
/// thread, 1024 threads); its shared-memory tile takes `36 * text` bytes
/// (72 KiB at 2048).
pub const MAS_MAX_TEXT: usize = 2048;
/// Longest transcript the CTC kernel is built for: `12 * (2L + 1)` bytes of
/// shared memory (48 KiB at 2048).
pub const CTC_MAX_LABELS: usize = 2048;

/// Whether the CUDA driver and NVRTC libraries can be loaded here (a device
/// may still be missing: [`GpuAligner::new`] says).
pub fn cuda_available() -> bool {
    // SAFETY: both calls only try to dlopen the library and drop it; no
    // symbol is resolved or called.
    unsafe { cudarc::driver::sys::is_culib_present() && nvrtc::sys::is_culib_present() }
}

fn driver(call: &'static str) -> impl FnOnce(DriverError) -> AlignError {
    move |e| AlignError::Driver { call, reason: e.to_string() }
}

fn to_i32(what: &str, v: usize) -> Result<i32, AlignError> {
    i32::try_from(v)
        .map_err(|_| AlignError::Unsupported { what: format!("{what} {v} does not fit the kernels' int32 indices") })
}

/// Text positions per MAS thread at most (`K` in the kernel).
const MAS_K: usize = 2;
/// The MAS kernel's entry points: `mas_pN` stages N tile values per thread.
const MAS_ENTRIES: [&str; 5] = ["mas_p1", "mas_p2", "mas_p4", "mas_p8", "mas_p16"];
/// Threads per MAS block at most (`__launch_bounds__(1024)`).
const MAS_MAX_THREADS: usize = 1024;
/// Threads per MAS block at least (the backtrack window takes one per frame).
const MAS_MIN_THREADS: usize = MAS_BT;
const _: () = assert!(MAS_MAX_TEXT <= MAS_K * MAS_MAX_THREADS);

/// Threads per block: one per `per` positions (text or states) up to `max`,
/// a whole number of warps, at least `min`.
fn threads_for(n: usize, per: usize, min: usize, max: usize) -> u32 {
    (n.div_ceil(per).div_ceil(32) * 32).clamp(min, max) as u32
}

/// Both kernels, compiled for one device, and the stream they run on.
pub struct GpuAligner {
    stream: Arc<CudaStream>,
    /// `MAS_ENTRIES`, in order.
    mas: Vec<CudaFunction>,
    ctc: CudaFunction,
    mas_max_text: usize,
    ctc_max_labels: usize,
    mas_threads: usize,
    ctc_threads: usize,
    sm_count: usize,
    name: String,
    capability: (i32, i32),
    // Keep the modules alive as long as their functions.
    _modules: [Arc<CudaModule>; 2],
}

impl GpuAligner {
    /// Opens CUDA device `ordinal` and compiles both kernels for it.
    ///
    /// Errors with [`AlignError::CudaUnavailable`] when the driver or NVRTC
    /// cannot be loaded or the device does not exist, [`AlignError::Compile`]
    /// when NVRTC rejects a kernel.
    pub fn new(ordinal: usize) -> Result<GpuAligner, AlignError> {
        // SAFETY: dlopen probes only, as in `cuda_available`.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(AlignError::CudaUnavailable {
                reason: "the CUDA driver library (libcuda.so.1) cannot be loaded".into(),
            });
        }
        // SAFETY: as above.
        if !unsafe { nvrtc::sys::is_culib_present() } {
            return Err(AlignError::CudaUnavailable {
                reason: "NVRTC (libnvrtc.so.13) cannot be loaded; put its directory (e.g. the Python wheel's \
                         site-packages/nvidia/cu13/lib) on LD_LIBRARY_PATH"
                    .into(),
            });
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| AlignError::CudaUnavailable { reason: format!("device {ordinal}: {e}") })?;
        let capability = ctx.compute_capability().map_err(driver("cuDeviceGetAttribute(compute capability)"))?;
        let name = ctx.name().map_err(driver("cuDeviceGetName"))?;
        let arch = format!("--gpu-architecture=compute_{}{}", capability.0, capability.1);
        let mas_module = compile(&ctx, MAS_SRC, "mas.cu", &arch)?;
        let ctc_module = compile(&ctx, CTC_SRC, "ctc_viterbi.cu", &arch)?;
        let mas = MAS_ENTRIES
            .iter()
            .map(|name| mas_module.load_function(name).map_err(driver("cuModuleGetFunction(mas_pN)")))
            .collect::<Result<Vec<_>, _>>()?;
        let ctc = ctc_module.load_function("ctc_viterbi").map_err(driver("cuModuleGetFunction(ctc_viterbi)"))?;

        // Dynamic shared memory beyond 48 KiB must be opted into per function.
        let sm_count = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(driver("cuDeviceGetAttribute(multiprocessors)"))?
            .max(1) as usize;
        let optin = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .map_err(driver("cuDeviceGetAttribute(shared memory opt-in)"))? as usize;
        let mut mas_static = 0;
        for f in &mas {
            mas_static = mas_static.max(f.shared_size_bytes().map_err(driver("cuFuncGetAttribute(mas)"))? as usize);
        }
        let ctc_static = ctc.shared_size_bytes().map_err(driver("cuFuncGetAttribute(ctc_viterbi)"))? as usize;
        // Both kernels are compiled with __launch_bounds__(1024); the driver
        // says what a block may really have (registers permitting).
        let max_threads = |f: &CudaFunction, what: &'static str| -> Result<usize, AlignError> {
            Ok((f.max_threads_per_block().map_err(driver(what))?.max(0) as usize / 32 * 32).min(1024))
        };
        let mut mas_threads = MAS_MAX_THREADS;
        for f in &mas {
            mas_threads = mas_threads.min(max_threads(f, "cuFuncGetAttribute(mas)")?);
        }
        let ctc_threads = max_threads(&ctc, "cuFuncGetAttribute(ctc_viterbi)")?;
        if mas_threads < MAS_MIN_THREADS || ctc_threads < 32 {
            return Err(AlignError::Unsupported {
                what: format!("kernels limited to {mas_threads} (MAS) and {ctc_threads} (CTC) threads per block"),
            });
        }
        let mut mas_max_text = MAS_MAX_TEXT.min(MAS_K * mas_threads);
        while mas_max_text > 32 && mas_smem(mas_max_text) > optin.saturating_sub(mas_static) {
            mas_max_text -= 32;
        }
        let ctc_max_labels = CTC_MAX_LABELS.min((optin.saturating_sub(ctc_static) / 12).saturating_sub(1) / 2);
        let dynamic = |f: &CudaFunction, bytes: usize, what: &'static str| {
            f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes as i32)
                .map_err(driver(what))
        };
        for f in &mas {
            dynamic(f, mas_smem(mas_max_text), "cuFuncSetAttribute(mas)")?;
        }
        dynamic(&ctc, (2 * ctc_max_labels + 1) * 12, "cuFuncSetAttribute(ctc_viterbi)")?;

        let stream = ctx.default_stream();
        Ok(GpuAligner {
            stream,
            mas,
            ctc,
            mas_max_text,
            ctc_max_labels,
            mas_threads,
            ctc_threads,
            sm_count,
            name,
            capability,
            _modules: [mas_module, ctc_module],
        })
    }

    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn device_name(&self) -> &str {
        &self.name
    }

    /// The device's compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.capability
    }

    /// Longest text (per item) [`GpuAligner::mas_batch`] takes on this device.
    pub fn mas_max_text(&self) -> usize {
        self.mas_max_text
    }

    /// Longest transcript (per item) [`GpuAligner::ctc_batch`] takes on this device.
    pub fn ctc_max_labels(&self) -> usize {
        self.ctc_max_labels
    }

    /// Waits for everything enqueued on the aligner's stream.
    pub fn synchronize(&self) -> Result<(), AlignError> {
        self.stream.synchronize().map_err(driver("cuStreamSynchronize"))
    }

    /// Monotonic alignment search of a padded host batch: copies the matrix
    /// to the device, runs the kernel (in place there; `value` itself is not
    /// modified) and copies only the int32 paths back. Bitwise the same paths
    /// as [`crate::maximum_path_batch`].
    ///
    /// # Shapes
    /// * `value`: `[shape.batch, shape.text, shape.speech]`, row-major.
    /// * `lens`: `[shape.batch]`; returns `shape.batch` paths of `lens[i].speech`.
    pub fn mas_batch(&self, value: &[f32], shape: MasShape, lens: &[MasLen]) -> Result<Vec<Vec<i32>>, AlignError> {
        let mut batch = self.mas_upload(value, shape, lens)?;
        self.mas_launch(&mut batch)?;
        self.mas_paths(&batch)
    }

    /// Copies a padded batch to the device (validating it as
    /// [`GpuAligner::mas_batch`] does, except for NaN, which the kernel reports).
    ///
    /// # Shapes
    /// * `value`: `[shape.batch, shape.text, shape.speech]`; `lens`: `[shape.batch]`.
    pub fn mas_upload(&self, value: &[f32], shape: MasShape, lens: &[MasLen]) -> Result<MasDeviceBatch, AlignError> {
        mas::check_batch(shape, lens, value.len())?;
        let t_cap = lens.iter().map(|l| l.text).max().unwrap_or(1);
        if t_cap > self.mas_max_text {
            return Err(AlignError::Unsupported {
                what: format!("MAS text length {t_cap} (this device's kernel takes at most {})", self.mas_max_text),
            });
        }
        to_i32("MAS padded text length", shape.text)?;
        to_i32("MAS padded speech length", shape.speech)?;
        to_i32("MAS text x padded speech", t_cap.saturating_mul(shape.speech))?;
        let threads = if shape.batch <= self.sm_count {
            // Blocks do not fill the GPU, so each item's multiprocessor has
            // nothing else to run: give the block every thread it may have,
            // which spreads the tile staging and backtrack windows thinner.
            self.mas_threads as u32
        } else {
            // More items than multiprocessors: blocks sized to the text, so
            // that several share a multiprocessor.
            threads_for(t_cap, 1, MAS_MIN_THREADS, self.mas_threads)
        };
        let flat: Vec<i32> = lens.iter().flat_map(|l| [l.text as i32, l.speech as i32]).collect();
        let s = &self.stream;
        let value = s
            .clone_htod(if value.is_empty() { &[0.0f32][..] } else { value })
            .map_err(driver("cuMemcpyHtoD(MAS matrix)"))?;
        let lens_d = s.clone_htod(&pad(flat)).map_err(driver("cuMemcpyHtoD(MAS lengths)"))?;
        let path = s.alloc_zeros::<i32>((shape.batch * shape.speech).max(1)).map_err(driver("cuMemAlloc(MAS path)"))?;
        let status = s.clone_htod(&pad(vec![MAS_NONE; shape.batch])).map_err(driver("cuMemcpyHtoD(MAS status)"))?;
        Ok(MasDeviceBatch {
            value,
            lens: lens_d,
            path,
            status,
            shape,
            host_lens: lens.to_vec(),
            threads,
            entry: mas_entry(t_cap, threads as usize),
            smem: mas_smem(t_cap) as u32,
        })
    }

    /// Copies `src`'s matrix over `dst`'s on the device (restores a pristine
    /// input before timing another run; the kernel works in place).
    pub fn mas_copy_values(&self, src: &MasDeviceBatch, dst: &mut MasDeviceBatch) -> Result<(), AlignError> {
        if src.shape != dst.shape {
            return Err(AlignError::ShapeMismatch {
                what: "MAS device batch copy",
                expected: dst.value.len(),
                got: src.value.len(),
            });
        }
        self.stream.memcpy_dtod(&src.value, &mut dst.value).map_err(driver("cuMemcpyDtoD(MAS matrix)"))
    }

    /// Enqueues the MAS kernel on the batch (asynchronous: follow with
    /// [`GpuAligner::mas_paths`] or [`GpuAligner::synchronize`]). The matrix
    /// is overwritten with `Q`; a second launch would search `Q`.
    pub fn mas_launch(&self, batch: &mut MasDeviceBatch) -> Result<(), AlignError> {
        if batch.shape.batch == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig {
            grid_dim: (batch.shape.batch as u32, 1, 1),
            block_dim: (batch.threads, 1, 1),
            shared_mem_bytes: batch.smem,
        };
        let (t_max, s_max) = (batch.shape.text as i32, batch.shape.speech as i32);
        let mut launch = self.stream.launch_builder(&self.mas[batch.entry]);
        launch
            .arg(&mut batch.value)
            .arg(&batch.lens)
            .arg(&mut batch.path)
            .arg(&mut batch.status)
            .arg(&t_max)
            .arg(&s_max);
        // SAFETY: the arguments match the `mas_pN` entries in kernels/mas.cu (float*, const
        // int*, int*, int*, int, int). `mas_upload` sized the buffers from a
        // validated shape ([b, t_max, s_max], [b, 2], [b, s_max], [b]) and
        // checked 1 <= t <= s, t <= t_max, s <= s_max and t_cap * s_max <
        // 2^31 for every item, which keeps every kernel index in bounds; the
        // block is whole warps, MAS_MIN_THREADS..=1024 threads (no more than
        // the functions take) with t_cap <= 2 * threads (t_cap <=
        // mas_max_text), `mas_entry` picked an entry whose K and PRE cover
        // t_cap at this block size, and the dynamic shared memory
        // (`mas_smem(t_cap)`) is within the limit set in `new`.
        unsafe { launch.launch(cfg) }.map_err(driver("cuLaunchKernel(mas)"))?;
        Ok(())
    }

    /// Runs [`GpuAligner::mas_launch`] between two CUDA events and returns the
    /// kernel's time in milliseconds (waits for the kernel).
    pub fn mas_launch_timed(&self, batch: &mut MasDeviceBatch) -> Result<f32, AlignError> {
        let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.stream.record_event(flags).map_err(driver("cuEventRecord"))?;
        self.mas_launch(batch)?;
        let end = self.stream.record_event(flags).map_err(driver("cuEventRecord"))?;
        start.elapsed_ms(&end).map_err(driver("cuEventElapsedTime"))
    }

    /// Waits for the batch's kernel and copies its paths back (one int32 per
    /// frame; all 0 if nothing was launched); errors with
    /// [`AlignError::NonFinite`] at the first NaN or +∞ the kernel met, in
    /// row-major order.
    pub fn mas_paths(&self, batch: &MasDeviceBatch) -> Result<Vec<Vec<i32>>, AlignError> {
        if batch.shape.batch == 0 {
            return Ok(Vec::new());
        }
        let path = self.stream.clone_dtoh(&batch.path).map_err(driver("cuMemcpyDtoH(MAS path)"))?;
        let status = self.stream.clone_dtoh(&batch.status).map_err(driver("cuMemcpyDtoH(MAS status)"))?;
        self.synchronize()?;
        let s_max = batch.shape.speech;
        for (item, &st) in status.iter().take(batch.shape.batch).enumerate() {
            if st != MAS_NONE {
                let k = st.max(0) as usize;
                return Err(AlignError::NonFinite { item, row: k / s_max, col: k % s_max });
            }
        }
        Ok(batch.host_lens.iter().enumerate().map(|(i, l)| path[i * s_max..i * s_max + l.speech].to_vec()).collect())
    }

    /// CTC Viterbi alignment of a padded host batch on the device; the same
    /// results, bit for bit, as [`crate::ctc_viterbi_batch`].
    ///
    /// Device memory: the log-probs, and one backpointer byte per frame and
    /// state, `[batch, frames, 2 * max_labels + 1]`.
    ///
    /// # Shapes
    /// * `log_probs`: `[shape.batch, shape.frames, shape.classes]`, row-major.
    /// * `labels`: `[shape.batch, shape.labels]`; `lens`: `[shape.batch]`.
    pub fn ctc_batch(
        &self,
        log_probs: &[f32],
        shape: CtcShape,
        labels: &[u32],
        lens: &[CtcLen],
        blank: usize,
    ) -> Result<Vec<CtcAlignment>, AlignError> {
        viterbi::check_batch(log_probs, shape, labels, lens, blank)?;
        if shape.batch == 0 {
            return Ok(Vec::new());
        }
        let l_cap = lens.iter().map(|l| l.labels).max().unwrap_or(0);
        if l_cap > self.ctc_max_labels {
            return Err(AlignError::Unsupported {
                what: format!(
                    "CTC transcript of {l_cap} labels (this device's kernel takes at most {})",
                    self.ctc_max_labels
                ),
            });
        }
        let n_cap = 2 * l_cap + 1;
        let f_max = to_i32("CTC padded frames", shape.frames)?;
        let c = to_i32("CTC classes", shape.classes)?;
        let l_max = to_i32("CTC padded labels", shape.labels)?;
        let blank_i = to_i32("CTC blank", blank)?;
        let bp_len = shape.batch.checked_mul(shape.frames).and_then(|v| v.checked_mul(n_cap)).ok_or_else(|| {
            AlignError::Unsupported { what: "CTC backpointer buffer larger than the address space".into() }
        })?;
        let labels_i: Vec<i32> = labels.iter().map(|&l| l as i32).collect();
        let flat: Vec<i32> = lens.iter().flat_map(|l| [l.frames as i32, l.labels as i32]).collect();
        let s = &self.stream;
        let lp = s.clone_htod(log_probs).map_err(driver("cuMemcpyHtoD(CTC log-probs)"))?;
        let labels_d = s.clone_htod(&pad(labels_i)).map_err(driver("cuMemcpyHtoD(CTC labels)"))?;
        let lens_d = s.clone_htod(&flat).map_err(driver("cuMemcpyHtoD(CTC lengths)"))?;
        let mut bp = s.alloc_zeros::<u8>(bp_len.max(1)).map_err(driver("cuMemAlloc(CTC backpointers)"))?;
        let mut states = s.alloc_zeros::<i32>(shape.batch * shape.frames).map_err(driver("cuMemAlloc(CTC states)"))?;
        let mut score = s.alloc_zeros::<f32>(shape.batch).map_err(driver("cuMemAlloc(CTC scores)"))?;
        let n_cap_i = n_cap as i32;
        let cfg = LaunchConfig {
            grid_dim: (shape.batch as u32, 1, 1),
            block_dim: (threads_for(n_cap, 1, 32, self.ctc_threads), 1, 1),
            shared_mem_bytes: (n_cap * 12) as u32,
        };
        let mut launch = s.launch_builder(&self.ctc);
        launch
            .arg(&lp)
            .arg(&labels_d)
            .arg(&lens_d)
            .arg(&mut bp)
            .arg(&mut states)
            .arg(&mut score)
            .arg(&f_max)
            .arg(&c)
            .arg(&l_max)
            .arg(&n_cap_i)
            .arg(&blank_i);
        // SAFETY: the arguments match `ctc_viterbi` in kernels/ctc_viterbi.cu
        // (const float*, const int*, const int*, unsigned char*, int*, float*,
        // then five ints). `check_batch` validated every length against the
        // padded shape the buffers were sized from, every label against
        // `0..classes` (so `row[lab]` is in bounds) and frames >= 1; n <= n_cap
        // bounds the backpointer and shared-memory indices; the block is whole
        // warps, no more than the function takes (threads stride over states),
        // with n_cap * 12 bytes of dynamic shared memory within the limit set
        // in `new`.
        unsafe { launch.launch(cfg) }.map_err(driver("cuLaunchKernel(ctc_viterbi)"))?;
        let states = s.clone_dtoh(&states).map_err(driver("cuMemcpyDtoH(CTC states)"))?;
        let score = s.clone_dtoh(&score).map_err(driver("cuMemcpyDtoH(CTC scores)"))?;
        self.synchronize()?;
        let f = shape.frames;
        let mut out = Vec::with_capacity(shape.batch);
        for (i, l) in lens.iter().enumerate() {
            if score[i] == f32::NEG_INFINITY {
                return Err(AlignError::NoPath { item: i });
            }
            let st = states[i * f..i * f + l.frames].to_vec();
            out.push(CtcAlignment { spans: viterbi::spans(&st, l.labels), states: st, score: score[i] });
        }
        Ok(out)
    }
}

/// A MAS batch resident on the device: the matrix (overwritten in place by
/// each launch), the lengths, the path and status buffers.
pub struct MasDeviceBatch {
    value: CudaSlice<f32>,
    lens: CudaSlice<i32>,
    path: CudaSlice<i32>,
    status: CudaSlice<i32>,
    shape: MasShape,
    host_lens: Vec<MasLen>,
    threads: u32,
    /// Index into `MAS_ENTRIES`.
    entry: usize,
    smem: u32,
}

impl MasDeviceBatch {
    /// The padded shape.
    pub fn shape(&self) -> MasShape {
        self.shape
    }

    /// Each item's lengths.
    pub fn lens(&self) -> &[MasLen] {
        &self.host_lens
    }
}

/// The MAS entry for texts up to `t_cap` on `threads` threads: the smallest
/// N with N * threads / MAS_TILE >= t_cap (rows staged per thread), which
/// also gives K = 2 text positions per thread exactly when t_cap > threads.
fn mas_entry(t_cap: usize, threads: usize) -> usize {
    let per_thread = (t_cap * MAS_TILE).div_ceil(threads).max(1).next_power_of_two();
    (per_thread.trailing_zeros() as usize).min(MAS_ENTRIES.len() - 1)
}

/// Dynamic shared memory of the MAS kernel for texts up to `t_cap`: the
/// forward tile `[t_cap][MAS_TILE + 1]`, or the backtrack window
/// `[MAS_BT + 1][MAS_BT]` where that is larger.
fn mas_smem(t_cap: usize) -> usize {
    (t_cap * (MAS_TILE + 1)).max((MAS_BT + 1) * MAS_BT) * std::mem::size_of::<f32>()
}

/// Device buffers are never empty (a zero-byte allocation is an error on
/// some drivers); the kernels never read the padding element.
fn pad(mut v: Vec<i32>) -> Vec<i32> {
    if v.is_empty() {
        v.push(0);
    }
    v
}

fn compile(ctx: &Arc<CudaContext>, src: &str, kernel: &'static str, arch: &str) -> Result<Arc<CudaModule>, AlignError> {
    let opts = CompileOptions {
        fmad: Some(false),
        ftz: Some(false),
        prec_div: Some(true),
        prec_sqrt: Some(true),
        options: vec![arch.to_string()],
        name: Some(kernel.to_string()),
        ..Default::default()
    };
    let ptx = nvrtc::compile_ptx_with_opts(src, opts).map_err(|e| AlignError::Compile {
        kernel,
        log: match e {
            CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
            other => format!("{other:?}"),
        },
    })?;
    ctx.load_module(ptx).map_err(driver("cuModuleLoadData"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entry chosen for every text length and block size covers the text
    /// (PRE rows staged per thread, K positions computed per thread) and is the
    /// smallest that does.
    #[test]
    fn mas_entry_covers_the_text() {
        let pre = [1usize, 2, 4, 8, 16];
        let k = [1usize, 1, 1, 1, 2];
        for t_cap in 1..=MAS_MAX_TEXT {
            for threads in [threads_for(t_cap, 1, MAS_MIN_THREADS, MAS_MAX_THREADS) as usize, MAS_MAX_THREADS] {
                if t_cap > MAS_K * threads {
                    continue;
                }
                let e = mas_entry(t_cap, threads);
                assert!(pre[e] * (threads / MAS_TILE) >= t_cap, "t={t_cap} threads={threads} entry {e}");
                assert!(k[e] * threads >= t_cap, "t={t_cap} threads={threads} entry {e}");
                assert!(
                    e == 0 || pre[e - 1] * (threads / MAS_TILE) < t_cap,
                    "t={t_cap}: entry {e} is not the smallest"
                );
            }
        }
        assert_eq!(threads_for(1, 1, MAS_MIN_THREADS, MAS_MAX_THREADS), 64);
        assert_eq!(threads_for(65, 1, MAS_MIN_THREADS, MAS_MAX_THREADS), 96);
        assert_eq!(threads_for(2048, 1, MAS_MIN_THREADS, MAS_MAX_THREADS), 1024);
    }
}
