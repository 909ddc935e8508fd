//! NCCL for GPU ranks, behind `dv_train::Collective`.
//!
//! NCCL and the CUDA driver are loaded at run time through `cudarc`
//! (`dynamic-loading`): this crate builds on machines with no CUDA, and
//! [`available`] says whether a run can use it (cudarc looks for
//! `libnccl.so`; the PyPI wheel ships `libnccl.so.2`, so a symlink may be
//! needed). Every NCCL and driver call goes through [`check`]-style helpers
//! that turn return codes into errors; each `unsafe` block names its
//! invariant.
//!
//! Collectives are enqueued on the CUDA legacy default stream, the stream
//! libtorch computes on unless told otherwise, so they are ordered after the
//! backward pass that produced the gradients. The host then polls the stream
//! and NCCL's asynchronous error state: past the group's timeout, or when a
//! peer has failed, the communicator is aborted and the collective returns
//! an error naming itself (the watchdog), rather than hanging.
#![deny(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cudarc::driver::sys as cu;
use cudarc::nccl::sys as nc;
use dv_torch::tch;
use dv_torch::tch::{Device, Kind, Tensor};
use dv_train::{Collective, CollectiveError};

/// Bytes in an NCCL unique id.
pub const UNIQUE_ID_BYTES: usize = 128;

/// Whether the NCCL and CUDA driver libraries can be loaded here.
#[allow(unsafe_code)]
pub fn available() -> bool {
    // SAFETY: only tries to dlopen the libraries; nothing is called.
    unsafe { nc::is_culib_present() && cu::is_culib_present() }
}

fn setup(reason: String) -> CollectiveError {
    CollectiveError::Setup(reason)
}

/// An NCCL call that returned an error: the call and NCCL's code. Private:
/// each caller maps it once into the public [`CollectiveError`] (a stall
/// when the watchdog aborted the call, else a setup error naming the rank).
#[derive(Debug, thiserror::Error)]
#[error("{call}: {code:?}")]
struct NcclCallError {
    /// The NCCL function (`ncclAllReduce`, …).
    call: &'static str,
    code: nc::ncclResult_t,
}

/// The error of the NCCL function `call` from cudarc's.
fn nccl(call: &'static str) -> impl Fn(cudarc::nccl::result::NcclError) -> NcclCallError {
    move |e| NcclCallError { call, code: e.0 }
}

/// A fresh NCCL unique id (rank 0 makes it and shares it).
pub fn unique_id() -> Result<Vec<u8>, CollectiveError> {
    if !available() {
        return Err(setup("NCCL or the CUDA driver cannot be loaded (is libnccl.so on LD_LIBRARY_PATH?)".into()));
    }
    let id = cudarc::nccl::result::get_uniqueid().map_err(nccl("ncclGetUniqueId")).map_err(|e| setup(e.to_string()))?;
    Ok(id.internal.iter().map(|&c| c as u8).collect())
}

/// Makes `device`'s primary context current on this thread, as
/// `cudaSetDevice` does. libtorch runs each op under a device guard that
/// restores the previous current device afterwards; NCCL binds its
/// communicator to the current device at init, and the host's stream queries
/// use the current context, so both must be this rank's GPU and not device 0
/// (cudaSetDevice semantics, as torchrun users call `torch.cuda.set_device`).
#[allow(unsafe_code)]
pub fn bind_device(device: usize) -> Result<(), CollectiveError> {
    let fail = |what: &str, e: cudarc::driver::DriverError| setup(format!("cuda:{device}: {what}: {e:?}"));
    cudarc::driver::result::init().map_err(|e| fail("cuInit", e))?;
    let dev = cudarc::driver::result::device::get(device as i32).map_err(|e| fail("cuDeviceGet", e))?;
    // SAFETY: `dev` came from cuDeviceGet; the primary context is retained
    // for the life of the process (libtorch uses the same one) and made
    // current on this thread only.
    unsafe {
        let ctx = cudarc::driver::result::primary_ctx::retain(dev).map_err(|e| fail("cuDevicePrimaryCtxRetain", e))?;
        cudarc::driver::result::ctx::set_current(ctx).map_err(|e| fail("cuCtxSetCurrent", e))?;
    }
    Ok(())
}

/// The communicator handle, shared with the watchdog thread, aborted at
/// most once.
struct Comm {
    raw: nc::ncclComm_t,
    aborted: AtomicBool,
}

// SAFETY: NCCL allows ncclCommAbort from another thread while a call on the
// communicator is blocked (this is how watchdogs unblock hung collectives);
// every other use happens on the owning rank's thread.
#[allow(unsafe_code)]
unsafe impl Send for Comm {}
// SAFETY: as `Send` above: only ncclCommAbort is called from another thread.
#[allow(unsafe_code)]
unsafe impl Sync for Comm {}

impl Comm {
    #[allow(unsafe_code)]
    fn abort(&self) {
        if !self.aborted.swap(true, Ordering::SeqCst) {
            // SAFETY: a live communicator, aborted once (the flag guards it).
            let _ = unsafe { cudarc::nccl::result::comm_abort(self.raw) };
        }
    }
}

/// What the watchdog watches: the collective in flight and since when.
#[derive(Default)]
struct Watch {
    in_flight: Mutex<Option<(Instant, String)>>,
    fired: AtomicBool,
    stop: AtomicBool,
}

/// One rank of an NCCL communicator, on one GPU.
pub struct NcclCollective {
    comm: Arc<Comm>,
    watch: Arc<Watch>,
    watchdog: Option<std::thread::JoinHandle<()>>,
    rank: usize,
    world: usize,
    device: usize,
    timeout: Duration,
    seq: u64,
}

impl NcclCollective {
    /// Joins the communicator `id` as `rank` of `world` on CUDA device
    /// `device`; collectives fail after `timeout` without progress.
    #[allow(unsafe_code)]
    pub fn new(
        id: &[u8],
        rank: usize,
        world: usize,
        device: usize,
        timeout: Duration,
    ) -> Result<NcclCollective, CollectiveError> {
        if id.len() != UNIQUE_ID_BYTES {
            return Err(setup(format!("NCCL id of {} bytes", id.len())));
        }
        let mut raw = nc::ncclUniqueId { internal: [0; UNIQUE_ID_BYTES] };
        for (d, s) in raw.internal.iter_mut().zip(id) {
            *d = *s as _;
        }
        bind_device(device)?;
        let _ = Tensor::f_zeros([1], (Kind::Float, Device::Cuda(device)))
            .map_err(|e| setup(format!("cuda:{device}: {e}")))?;
        tch::Cuda::synchronize(device as i64);
        let mut comm: nc::ncclComm_t = std::ptr::null_mut();
        // SAFETY: `comm` is a valid out-pointer; the id came from ncclGetUniqueId on rank 0.
        unsafe { cudarc::nccl::result::comm_init_rank(&mut comm, world as i32, raw, rank as i32) }
            .map_err(nccl("ncclCommInitRank"))
            .map_err(|e| setup(format!("rank {rank}: {e}")))?;
        let comm = Arc::new(Comm { raw: comm, aborted: AtomicBool::new(false) });
        let watch = Arc::new(Watch::default());
        // The watchdog: a collective in flight longer than the timeout gets the
        // communicator aborted, which unblocks the host call or the kernel.
        let watchdog = {
            let (comm, watch) = (comm.clone(), watch.clone());
            std::thread::spawn(move || {
                while !watch.stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(100));
                    let late = watch.in_flight.lock().map(|g| g.as_ref().is_some_and(|(t, _)| t.elapsed() > timeout));
                    if late.unwrap_or(false) {
                        watch.fired.store(true, Ordering::SeqCst);
                        comm.abort();
                        break;
                    }
                }
            })
        };
        Ok(NcclCollective { comm, watch, watchdog: Some(watchdog), rank, world, device, timeout, seq: 0 })
    }

    fn arm(&self, what: &str) {
        if let Ok(mut g) = self.watch.in_flight.lock() {
            *g = Some((Instant::now(), what.to_string()));
        }
    }

    fn disarm(&self) {
        if let Ok(mut g) = self.watch.in_flight.lock() {
            *g = None;
        }
    }

    fn stalled(&self, what: &str) -> CollectiveError {
        CollectiveError::Stalled {
            rank: self.rank,
            seq: self.seq,
            what: what.into(),
            missing: Vec::new(),
            timeout_s: self.timeout.as_secs_f64(),
        }
    }

    /// Runs one collective on a CUDA float32 tensor, staging CPU or
    /// non-contiguous tensors through a contiguous GPU copy.
    fn collective(
        &mut self,
        t: &mut Tensor,
        what: &str,
        call: impl Fn(*mut std::ffi::c_void, usize, nc::ncclComm_t) -> Result<(), NcclCallError>,
    ) -> Result<(), CollectiveError> {
        if self.comm.aborted.load(Ordering::SeqCst) {
            return Err(setup(format!("rank {}: {what}: communicator aborted", self.rank)));
        }
        let rank = self.rank;
        let terr = |reason: String| CollectiveError::Tensor { rank, what: what.to_string(), reason };
        if t.kind() != Kind::Float {
            return Err(terr(format!("expected float32, got {:?}", t.kind())));
        }
        if !t.device().is_cuda() || !t.is_contiguous() {
            let dev = Device::Cuda(self.device);
            let mut g = t.f_to_device(dev).and_then(|g| g.f_contiguous()).map_err(|e| terr(e.to_string()))?;
            self.collective(&mut g, what, call)?;
            tch::no_grad(|| t.f_copy_(&g)).map_err(|e| terr(e.to_string()))?;
            return Ok(());
        }
        self.arm(what);
        let r = call(t.data_ptr(), t.numel(), self.comm.raw);
        let r = match r {
            Err(e) if self.watch.fired.load(Ordering::SeqCst) => Err(self.stalled(&format!("{what} ({e})"))),
            Err(e) => Err(setup(format!("rank {}: {what}: {e}", self.rank))),
            Ok(()) => self.wait(what),
        };
        self.disarm();
        r
    }

    /// Waits for the default stream, watching NCCL's async error and the timeout.
    #[allow(unsafe_code)]
    fn wait(&mut self, what: &str) -> Result<(), CollectiveError> {
        let started = Instant::now();
        loop {
            // SAFETY: queries the current context's legacy default stream (null handle).
            let q = unsafe { cu::cuStreamQuery(std::ptr::null_mut()) };
            if q == cu::CUresult::CUDA_SUCCESS {
                self.seq += 1;
                return Ok(());
            }
            if q != cu::CUresult::CUDA_ERROR_NOT_READY {
                self.comm.abort();
                return Err(CollectiveError::PeerFailed {
                    rank: self.rank,
                    seq: self.seq,
                    what: what.into(),
                    peer: self.rank,
                    reason: format!("CUDA error {q:?}"),
                });
            }
            let mut async_err = nc::ncclResult_t::ncclSuccess;
            // SAFETY: the communicator is live (not yet destroyed) and the out-pointer valid.
            let r = unsafe { nc::ncclCommGetAsyncError(self.comm.raw, &mut async_err) };
            if r != nc::ncclResult_t::ncclSuccess
                || !matches!(async_err, nc::ncclResult_t::ncclSuccess | nc::ncclResult_t::ncclInProgress)
            {
                self.comm.abort();
                return Err(CollectiveError::PeerFailed {
                    rank: self.rank,
                    seq: self.seq,
                    what: what.into(),
                    peer: CollectiveError::UNKNOWN_PEER,
                    reason: format!("NCCL reports {async_err:?} (a peer died or the network failed)"),
                });
            }
            if self.watch.fired.load(Ordering::SeqCst) || started.elapsed() > self.timeout {
                self.comm.abort();
                return Err(self.stalled(what));
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

impl Collective for NcclCollective {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world_size(&self) -> usize {
        self.world
    }

    #[allow(unsafe_code)]
    fn all_reduce_sum(&mut self, t: &mut Tensor, what: &str) -> Result<(), CollectiveError> {
        self.collective(t, what, |ptr, n, comm| {
            // SAFETY: ptr addresses n contiguous f32 on this rank's device (checked by
            // `collective`), reduced in place on the legacy default stream.
            unsafe {
                cudarc::nccl::result::all_reduce(
                    ptr,
                    ptr,
                    n,
                    nc::ncclDataType_t::ncclFloat32,
                    nc::ncclRedOp_t::ncclSum,
                    comm,
                    std::ptr::null_mut(),
                )
            }
            .map(|_| ())
            .map_err(nccl("ncclAllReduce"))
        })
    }

    #[allow(unsafe_code)]
    fn broadcast(&mut self, t: &mut Tensor, root: usize, what: &str) -> Result<(), CollectiveError> {
        if root >= self.world {
            return Err(setup(format!("rank {}: {what}: root {root} outside 0..{}", self.rank, self.world)));
        }
        self.collective(t, what, |ptr, n, comm| {
            // SAFETY: as in all_reduce_sum.
            unsafe {
                cudarc::nccl::result::broadcast(
                    ptr,
                    ptr,
                    n,
                    nc::ncclDataType_t::ncclFloat32,
                    root as i32,
                    comm,
                    std::ptr::null_mut(),
                )
            }
            .map(|_| ())
            .map_err(nccl("ncclBroadcast"))
        })
    }

    fn abort(&mut self, _reason: &str) {
        self.comm.abort();
    }
}

impl Drop for NcclCollective {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        self.watch.stop.store(true, Ordering::SeqCst);
        if let Some(w) = self.watchdog.take() {
            let _ = w.join();
        }
        if !self.comm.aborted.swap(true, Ordering::SeqCst) {
            // SAFETY: destroying a live communicator once, after its last use
            // (the watchdog has stopped).
            let _ = unsafe { cudarc::nccl::result::comm_destroy(self.comm.raw) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_nccl_call_names_the_call_and_the_code() {
        let e = nccl("ncclAllReduce")(cudarc::nccl::result::NcclError(nc::ncclResult_t::ncclUnhandledCudaError));
        // cudarc's own Debug says only "NcclError": the code is ours to name.
        assert_eq!(e.to_string(), "ncclAllReduce: ncclUnhandledCudaError");
    }
}
