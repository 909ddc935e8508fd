//! Links `dv` against libtorch with the rpath `dv-torch` gives
//! (`trainers/torch/build.rs` owns it and says why), so that the one binary
//! runs on CPU and GPU machines without `LD_LIBRARY_PATH`. The rpath goes on
//! every target, so the integration tests that call into `dv-train` load
//! libtorch too.
//!
//! `libtorch_cuda` (`DEP_DV_TORCH_CUDA_ARG`) is not linked: with it, every
//! `dv` process loaded the CUDA libraries, 0.25 s and 350 MiB resident on
//! the dev VM before `main`, `dv synth` too, which never calls libtorch.
//! `main` loads it for the commands that run libtorch instead
//! (`dv_torch::load_cuda`).
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_DV_TORCH_RPATH_ARG");
    if let Ok(rpath) = std::env::var("DEP_DV_TORCH_RPATH_ARG") {
        println!("cargo:rustc-link-arg={rpath}");
    }
}
