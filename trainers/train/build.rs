//! Links this crate's test and example binaries against libtorch with the
//! arguments `dv-torch` gives (an rpath to libtorch, `libtorch_cuda` forced
//! in): `trainers/torch/build.rs` owns them and says why.
fn main() {
    for key in ["DEP_DV_TORCH_RPATH_ARG", "DEP_DV_TORCH_CUDA_ARG"] {
        println!("cargo:rerun-if-env-changed={key}");
        if let Ok(arg) = std::env::var(key) {
            println!("cargo:rustc-link-arg={arg}");
        }
    }
}
