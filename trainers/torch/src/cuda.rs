//! Loading libtorch's CUDA backend at run time ([`load_cuda`]).
//!
//! `libtorch_cuda.so` registers libtorch's CUDA backend from its static
//! initialisers; nothing calls it by name. Linked into a binary, it is
//! loaded, with everything it needs (cuBLAS, cuDNN, NCCL, the CUDA
//! runtime), into every process the binary starts: 0.25 s and 350 MiB
//! resident on the 2-core dev VM, beyond libtorch_cpu's 0.3 s and 115 MiB
//! (`benchmarks/cpu-inference.md`, "`dv synth` start-up"), for commands
//! that never call libtorch too (`dv synth`). So `dv` does not link it: the
//! commands that run libtorch call [`load_cuda`] before their first
//! libtorch call. That order matters: libtorch looks for its CUDA backend
//! once, at its first use of CUDA, and a process that looked before the
//! library was loaded has no CUDA for good.
#![allow(unsafe_code)]

use std::path::PathBuf;

use crate::info::{mapped_dir, process_maps};
use crate::TorchError;

/// The backend's file, next to `libtorch_cpu.so`.
const CUDA_LIBRARY: &str = "libtorch_cuda.so";

/// Loads `libtorch_cuda.so` from the directory of the `libtorch_cpu.so`
/// this process runs on, once, for the life of the process; call it before
/// any libtorch call. Returns the library's path, or `None` for a libtorch
/// built without CUDA (no such file there). Already loaded (a binary that
/// links it, or a second call): its path, nothing done.
///
/// Errors: [`TorchError::NotLoaded`] when libtorch is not in this process,
/// [`TorchError::CudaLoad`] when the file is there but does not load (a
/// CUDA library it needs is missing).
pub fn load_cuda() -> Result<Option<PathBuf>, TorchError> {
    let maps = process_maps()?;
    if let Some(dir) = mapped_dir(&maps, CUDA_LIBRARY) {
        return Ok(Some(dir.join(CUDA_LIBRARY)));
    }
    let path = mapped_dir(&maps, "libtorch_cpu.so").ok_or(TorchError::NotLoaded)?.join(CUDA_LIBRARY);
    if !path.exists() {
        return Ok(None);
    }
    // RTLD_GLOBAL, as when linked: libraries libtorch opens later (its CUDA
    // linear algebra) resolve their symbols against it.
    let flags = libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL;
    // SAFETY: loading runs the library's static initialisers, which
    // register libtorch's CUDA backend with the libtorch_cpu already loaded
    // from the same directory (the build the wheel ships together). Nothing
    // has called libtorch yet (the caller's contract), and the handle is
    // never closed (`into_raw`), so no code or registration of the library
    // outlives it.
    let lib = unsafe { libloading::os::unix::Library::open(Some(&path), flags) }
        .map_err(|e| TorchError::CudaLoad { path: path.clone(), reason: e.to_string() })?;
    let _ = lib.into_raw();
    Ok(Some(path))
}
