//! The one place that links libtorch. Every crate whose binaries or tests load
//! libtorch gets these flags from here.
//!
//! libtorch is the directory torch-sys found (`DEP_TCH_LIBTORCH_LIB`: the
//! `torch==2.11.0` wheel's `torch/lib` under `LIBTORCH_USE_PYTORCH=1`). A
//! binary that loads it needs two link arguments:
//!
//! - an rpath to that directory, so that it runs without `LD_LIBRARY_PATH`;
//! - `libtorch_cuda` forced into its needed list. Nothing calls it by name, so
//!   under `--as-needed` the linker drops it, and CUDA is then silently
//!   unavailable on a GPU machine (`tch::Cuda::device_count()` is 0).
//!
//! Cargo passes link arguments only to the targets of the package whose build
//! script prints them, so this script applies them to `dv-torch`'s own tests
//! and hands them on through the `links = "dv-torch"` metadata. Cargo sets
//! those only for direct dependents, which every crate that uses tch is (it
//! reaches tch as `dv_torch::tch`, never as its own dependency): such a crate
//! reads `DEP_DV_TORCH_RPATH_ARG` and `DEP_DV_TORCH_CUDA_ARG` in its build
//! script and prints them as `cargo:rustc-link-arg` (`infra/dv/build.rs`,
//! `trainers/train/build.rs`, `trainers/nccl/build.rs`,
//! `trainers/fused/build.rs`). `CUDA_ARG` is absent for a CPU-only libtorch;
//! both are absent when torch-sys reports no directory.
//!
//! It also records the directory as `DV_LIBTORCH_BUILD_DIR` for
//! [`LibtorchInfo::build_dir`](src/info.rs), which `dv doctor` prints beside
//! the libtorch actually loaded.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    let Ok(lib) = std::env::var("DEP_TCH_LIBTORCH_LIB") else { return };
    println!("cargo:rustc-env=DV_LIBTORCH_BUILD_DIR={lib}");
    let rpath = format!("-Wl,-rpath,{lib}");
    println!("cargo:rustc-link-arg={rpath}");
    println!("cargo:rpath_arg={rpath}");
    if std::path::Path::new(&lib).join("libtorch_cuda.so").exists() {
        let cuda = "-Wl,--no-as-needed,-ltorch_cuda,--as-needed";
        println!("cargo:rustc-link-arg={cuda}");
        println!("cargo:cuda_arg={cuda}");
    }
}
