//! Links `dv` against libtorch so that the one binary works on CPU and GPU
//! machines without `LD_LIBRARY_PATH`: an rpath to the libtorch directory the
//! build found, and `libtorch_cuda` forced into the needed list (the linker
//! would drop it under `--as-needed`, since no symbol of it is named, and
//! CUDA would then be silently unavailable). The rpath goes on every target,
//! so the integration tests that call into `dv-train` load libtorch too.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    let Ok(lib) = std::env::var("DEP_TCH_LIBTORCH_LIB") else { return };
    println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
    if std::path::Path::new(&lib).join("libtorch_cuda.so").exists() {
        println!("cargo:rustc-link-arg-bins=-Wl,--no-as-needed,-ltorch_cuda,--as-needed");
    }
}
