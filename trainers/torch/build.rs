//! Links this crate's test binaries against libtorch the way `dv` is linked:
//! an rpath to libtorch's directory, and `libtorch_cuda` forced into the
//! binary's needed list (without `--no-as-needed` the linker drops it, since
//! nothing calls it by name, and CUDA is then silently unavailable on GPU
//! machines). `infra/dv/build.rs` does the same for the `dv` binary.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    let Ok(lib) = std::env::var("DEP_TCH_LIBTORCH_LIB") else { return };
    println!("cargo:rustc-env=DV_LIBTORCH_BUILD_DIR={lib}");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
    if std::path::Path::new(&lib).join("libtorch_cuda.so").exists() {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed,-ltorch_cuda,--as-needed");
    }
}
