//! Links this crate's test binaries against libtorch as `dv` is linked (an
//! rpath to the libtorch directory, `libtorch_cuda` forced in); see
//! `trainers/torch/build.rs` for why.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    let Ok(lib) = std::env::var("DEP_TCH_LIBTORCH_LIB") else { return };
    println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
    if std::path::Path::new(&lib).join("libtorch_cuda.so").exists() {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed,-ltorch_cuda,--as-needed");
    }
}
