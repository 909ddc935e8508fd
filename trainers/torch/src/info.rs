//! What libtorch is loaded, and what it can reach.

use std::path::{Path, PathBuf};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum TorchError {
    /// libtorch is linked but its shared library was not found among the
    /// process's mappings.
    #[error("libtorch_cpu.so is not mapped into this process (read /proc/self/maps)")]
    NotLoaded,
    /// libtorch's CUDA backend is next to libtorch but does not load.
    #[error("cannot load libtorch's CUDA backend {path}: {reason}")]
    CudaLoad { path: PathBuf, reason: String },
    /// A file next to libtorch could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Facts about the libtorch this process runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibtorchInfo {
    /// `torch.__version__` of the wheel libtorch came from, e.g. `2.11.0+cu130`.
    pub version: Option<String>,
    /// Directory of the `libtorch_cpu.so` actually loaded.
    pub lib_dir: PathBuf,
    /// Directory libtorch was found in at build time.
    pub build_dir: Option<PathBuf>,
    /// Whether `libtorch_cuda.so` is loaded into this process (linked, or
    /// loaded by [`crate::load_cuda`]); without it CUDA is unusable even on
    /// a GPU.
    pub cuda_linked: bool,
    /// Whether libtorch can use CUDA now (a driver and a device are present).
    pub cuda_usable: bool,
    /// CUDA devices libtorch can use (0 without a GPU or driver).
    pub cuda_devices: i64,
    /// Whether cuDNN can be used.
    pub cudnn_available: bool,
    /// cuDNN version as libtorch reports it (e.g. 91900), when CUDA works.
    pub cudnn_version: Option<i64>,
    /// CUDA runtime version (e.g. 13000), when CUDA works.
    pub cudart_version: Option<i64>,
    /// Intra-op CPU threads.
    pub cpu_threads: i32,
    pub mkl: bool,
    pub openmp: bool,
}

impl LibtorchInfo {
    /// Queries the loaded libtorch.
    pub fn query() -> Result<LibtorchInfo, TorchError> {
        // Touch libtorch first so that it is certainly loaded and initialised.
        let cuda_devices = if tch::Cuda::is_available() { tch::Cuda::device_count() } else { 0 };
        let maps = process_maps()?;
        let lib_dir = mapped_dir(&maps, "libtorch_cpu.so").ok_or(TorchError::NotLoaded)?;
        let version = read_version(&lib_dir)?;
        let cuda_up = cuda_devices > 0;
        Ok(LibtorchInfo {
            version,
            build_dir: option_env!("DV_LIBTORCH_BUILD_DIR").map(PathBuf::from),
            cuda_linked: mapped_dir(&maps, "libtorch_cuda.so").is_some(),
            cuda_usable: tch::utils::has_cuda(),
            cuda_devices,
            cudnn_available: cuda_up && tch::Cuda::cudnn_is_available(),
            cudnn_version: cuda_up.then(tch::utils::version_cudnn),
            cudart_version: cuda_up.then(tch::utils::version_cudart),
            cpu_threads: tch::utils::get_num_threads(),
            mkl: tch::utils::has_mkl(),
            openmp: tch::utils::has_openmp(),
            lib_dir,
        })
    }
}

pub(crate) fn process_maps() -> Result<String, TorchError> {
    let maps_path = Path::new("/proc/self/maps");
    std::fs::read_to_string(maps_path).map_err(|source| TorchError::Io { path: maps_path.to_path_buf(), source })
}

/// The directory of the shared library `name` mapped into this process.
pub(crate) fn mapped_dir(maps: &str, name: &str) -> Option<PathBuf> {
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| Path::new(p).file_name().is_some_and(|f| f == name))
        .and_then(|p| Path::new(p).parent().map(Path::to_path_buf))
}

/// Reads `__version__` from the wheel's `torch/version.py` (libtorch's
/// directory is `torch/lib`). `None` for a libtorch not from a wheel.
fn read_version(lib_dir: &Path) -> Result<Option<String>, TorchError> {
    let Some(path) = lib_dir.parent().map(|p| p.join("version.py")) else { return Ok(None) };
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path).map_err(|source| TorchError::Io { path: path.clone(), source })?;
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix("__version__"))
        .and_then(|rest| rest.split(['\'', '"']).nth(1))
        .map(str::to_string))
}
