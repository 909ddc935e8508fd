//! Integration tests of dv-torch: the libtorch this crate links is the one
//! the build found, and the forced link of libtorch_cuda holds.

use dv_torch::LibtorchInfo;

#[test]
fn loaded_libtorch_is_the_pinned_wheel() {
    let info = LibtorchInfo::query().expect("libtorch info");
    let version = info.version.expect("torch/version.py next to libtorch");
    assert!(version.starts_with("2.11.0"), "expected the torch==2.11.0 wheel, loaded {version}");
    if let Some(build) = &info.build_dir {
        assert_eq!(
            std::fs::canonicalize(build).unwrap(),
            std::fs::canonicalize(&info.lib_dir).unwrap(),
            "the rpath must load the libtorch the build linked"
        );
    }
}

#[test]
fn libtorch_cuda_is_linked_when_the_wheel_has_it() {
    let info = LibtorchInfo::query().expect("libtorch info");
    let wheel_has_cuda = info.lib_dir.join("libtorch_cuda.so").exists();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mapped = maps.contains("/libtorch_cuda.so");
    assert_eq!(wheel_has_cuda, mapped, "libtorch_cuda.so present in wheel: {wheel_has_cuda}, mapped: {mapped}");
    assert_eq!(info.cuda_linked, mapped);
}
