//! Links `dv` against libtorch with the arguments `dv-torch` gives
//! (`trainers/torch/build.rs` owns them and says why), so that the one binary
//! runs on CPU and GPU machines without `LD_LIBRARY_PATH`. The rpath goes on
//! every target, so the integration tests that call into `dv-train` load
//! libtorch too; `libtorch_cuda` is forced into the binary only.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_DV_TORCH_RPATH_ARG");
    println!("cargo:rerun-if-env-changed=DEP_DV_TORCH_CUDA_ARG");
    if let Ok(rpath) = std::env::var("DEP_DV_TORCH_RPATH_ARG") {
        println!("cargo:rustc-link-arg={rpath}");
    }
    if let Ok(cuda) = std::env::var("DEP_DV_TORCH_CUDA_ARG") {
        println!("cargo:rustc-link-arg-bins={cuda}");
    }
}
