//! The CUDA driver, NVRTC and NCCL, loaded at run time with `dlopen`.
//!
//! Nothing here links CUDA: each library is looked up by its soname, first
//! through the dynamic loader's own search (`LD_LIBRARY_PATH`, `ldconfig`),
//! then in extra directories the caller names (the `nvidia/*/lib` folders of
//! the PyTorch wheel, say). A library that is absent is reported, never a
//! crash.

use std::ffi::{c_char, c_int, c_uint, CStr};
use std::path::{Path, PathBuf};

use libloading::{Library, Symbol};

/// A library that was found, where, and the version it reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub path: String,
    pub version: String,
}

/// One CUDA device as the driver reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub index: i32,
    pub name: String,
    pub memory_bytes: u64,
    pub compute_capability: (i32, i32),
}

/// The driver, and the devices it sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Driver {
    pub loaded: Loaded,
    pub devices: Vec<Device>,
}

/// Why a CUDA library, or what it reports, cannot be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CudaError {
    /// None of the library's names is on the loader's path or in the
    /// folders searched.
    #[error("not found ({names})")]
    NotFound { names: String },
    /// Each candidate that exists failed to load: `path: reason` each.
    #[error("{}", tried.join("; "))]
    Load { tried: Vec<String> },
    /// The library lacks a symbol.
    #[error("{name}: {reason}")]
    Symbol { name: String, reason: String },
    /// A CUDA driver call failed.
    #[error("{call} returned CUDA error {code}")]
    Driver { call: &'static str, code: i32 },
    /// `nvrtcVersion` failed.
    #[error("nvrtcVersion returned NVRTC error {code}")]
    Nvrtc { code: i32 },
    /// `ncclGetVersion` failed.
    #[error("ncclGetVersion returned NCCL error {code}")]
    Nccl { code: i32 },
}

fn open(names: &[&str], extra_dirs: &[PathBuf]) -> Result<(Library, String), CudaError> {
    let mut tried = Vec::new();
    for name in names {
        let mut candidates: Vec<PathBuf> = vec![PathBuf::from(name)];
        candidates.extend(extra_dirs.iter().map(|d| d.join(name)));
        for c in candidates {
            if c.components().count() > 1 && !c.exists() {
                continue;
            }
            // SAFETY: loading a CUDA library runs its initialisers; these are
            // NVIDIA's own libraries, loaded once, with no other thread
            // depending on their state.
            match unsafe { Library::new(&c) } {
                Ok(lib) => return Ok((lib, mapped_path(name).unwrap_or_else(|| c.display().to_string()))),
                // dlopen's message names the file already.
                Err(e) if e.to_string().contains(&*c.to_string_lossy()) => tried.push(e.to_string()),
                Err(e) => tried.push(format!("{}: {e}", c.display())),
            }
        }
    }
    Err(if tried.is_empty() { CudaError::NotFound { names: names.join(", ") } } else { CudaError::Load { tried } })
}

/// Where the loader found a library loaded by soname: its path in
/// `/proc/self/maps`.
fn mapped_path(name: &str) -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| Path::new(p).file_name().is_some_and(|f| f == name))
        .map(str::to_string)
}

/// Looks up a symbol. `T` must be the symbol's true C signature.
fn sym<'l, T>(lib: &'l Library, name: &str) -> Result<Symbol<'l, T>, CudaError> {
    // SAFETY: every caller passes the documented C signature of `name` as `T`.
    unsafe { lib.get::<T>(name.as_bytes()) }
        .map_err(|e| CudaError::Symbol { name: name.to_string(), reason: e.to_string() })
}

/// The one checked gate for CUDA driver return codes (0 is `CUDA_SUCCESS`).
fn check(what: &'static str, code: c_int) -> Result<(), CudaError> {
    if code == 0 {
        Ok(())
    } else {
        Err(CudaError::Driver { call: what, code })
    }
}

/// The CUDA driver (`libcuda.so.1`) and its devices.
pub fn driver() -> Result<Driver, CudaError> {
    let (lib, path) = open(&["libcuda.so.1", "libcuda.so"], &[])?;
    type Init = unsafe extern "C" fn(c_uint) -> c_int;
    type GetInt = unsafe extern "C" fn(*mut c_int) -> c_int;
    type DeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
    type GetName = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int;
    type TotalMem = unsafe extern "C" fn(*mut usize, c_int) -> c_int;
    type Attr = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int;
    let init: Symbol<'_, Init> = sym(&lib, "cuInit")?;
    let version: Symbol<'_, GetInt> = sym(&lib, "cuDriverGetVersion")?;
    let count: Symbol<'_, GetInt> = sym(&lib, "cuDeviceGetCount")?;
    let device_get: Symbol<'_, DeviceGet> = sym(&lib, "cuDeviceGet")?;
    let get_name: Symbol<'_, GetName> = sym(&lib, "cuDeviceGetName")?;
    let total_mem: Symbol<'_, TotalMem> = sym(&lib, "cuDeviceTotalMem_v2")?;
    let attr: Symbol<'_, Attr> = sym(&lib, "cuDeviceGetAttribute")?;
    // The signatures above match the CUDA driver API, and every out-pointer
    // below points to a live local of the right type and size.
    let mut v: c_int = 0;
    // SAFETY: cuDriverGetVersion(int*) writes one int to a live local.
    check("cuDriverGetVersion", unsafe { version(&mut v) })?;
    // SAFETY: cuInit(unsigned) takes no pointer; 0 is its only valid flag.
    check("cuInit", unsafe { init(0) })?;
    let mut n: c_int = 0;
    // SAFETY: cuDeviceGetCount(int*) writes one int to a live local.
    check("cuDeviceGetCount", unsafe { count(&mut n) })?;
    let mut devices = Vec::new();
    for i in 0..n {
        let mut dev: c_int = 0;
        // SAFETY: writes one CUdevice (an int) to a live local; 0 <= i < the device count.
        check("cuDeviceGet", unsafe { device_get(&mut dev, i) })?;
        let mut name = [0 as c_char; 256];
        // SAFETY: writes at most `name.len()` bytes, NUL included, into `name`.
        check("cuDeviceGetName", unsafe { get_name(name.as_mut_ptr(), name.len() as c_int, dev) })?;
        // SAFETY: the driver wrote a NUL-terminated string into `name`.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let mut mem: usize = 0;
        // SAFETY: cuDeviceTotalMem_v2(size_t*, CUdevice) writes one size_t to a live local.
        check("cuDeviceTotalMem", unsafe { total_mem(&mut mem, dev) })?;
        let (mut major, mut minor): (c_int, c_int) = (0, 0);
        // 75 and 76: CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR.
        // SAFETY: cuDeviceGetAttribute(int*, attribute, CUdevice) writes one int to a live local.
        check("cuDeviceGetAttribute", unsafe { attr(&mut major, 75, dev) })?;
        // SAFETY: as above.
        check("cuDeviceGetAttribute", unsafe { attr(&mut minor, 76, dev) })?;
        devices.push(Device { index: i, name, memory_bytes: mem as u64, compute_capability: (major, minor) });
    }
    Ok(Driver { loaded: Loaded { path, version: format!("{}.{}", v / 1000, (v % 1000) / 10) }, devices })
}

/// NVRTC, the run-time CUDA compiler the GPU kernels are built with.
pub fn nvrtc(extra_dirs: &[PathBuf]) -> Result<Loaded, CudaError> {
    let (lib, path) = open(&["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"], extra_dirs)?;
    type Version = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
    let version: Symbol<'_, Version> = sym(&lib, "nvrtcVersion")?;
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: nvrtcVersion(int*, int*) writes two ints to live locals.
    let code = unsafe { version(&mut major, &mut minor) };
    if code != 0 {
        return Err(CudaError::Nvrtc { code });
    }
    Ok(Loaded { path, version: format!("{major}.{minor}") })
}

/// NCCL, the collective library of data-parallel training.
pub fn nccl(extra_dirs: &[PathBuf]) -> Result<Loaded, CudaError> {
    let (lib, path) = open(&["libnccl.so.2", "libnccl.so"], extra_dirs)?;
    type Version = unsafe extern "C" fn(*mut c_int) -> c_int;
    let version: Symbol<'_, Version> = sym(&lib, "ncclGetVersion")?;
    let mut v: c_int = 0;
    // SAFETY: ncclGetVersion(int*) writes one int to a live local.
    let code = unsafe { version(&mut v) };
    if code != 0 {
        return Err(CudaError::Nccl { code });
    }
    // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
    Ok(Loaded { path, version: format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100) })
}

/// The `lib` folders of the NVIDIA wheels next to a PyTorch wheel's
/// `torch/lib` (`site-packages/nvidia/*/lib`, and `nvidia/cu13/lib`).
pub fn wheel_library_dirs(torch_lib: &Path) -> Vec<PathBuf> {
    let Some(site) = torch_lib.parent().and_then(Path::parent) else { return Vec::new() };
    let nvidia = site.join("nvidia");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&nvidia)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path().join("lib"))).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs
}
