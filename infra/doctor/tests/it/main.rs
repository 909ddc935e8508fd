//! Integration tests of dv-doctor: NVRTC and NCCL load from the PyTorch
//! wheel's NVIDIA libraries (as on a GPU machine), tools are found on PATH.

use std::path::PathBuf;
use std::process::Command;

use dv_doctor::{cpu, cuda, tool};

fn torch_lib() -> PathBuf {
    let out = Command::new("python3")
        .args(["-c", "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))"])
        .output()
        .expect("python3");
    assert!(out.status.success(), "the test command installs torch");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

#[test]
fn nvrtc_and_nccl_load_from_the_wheel() {
    let dirs = cuda::wheel_library_dirs(&torch_lib());
    assert!(dirs.iter().any(|d| d.ends_with("nccl/lib")), "{dirs:?}");
    let nvrtc = cuda::nvrtc(&dirs).expect("the torch wheel ships NVRTC");
    assert!(nvrtc.version.starts_with("13."), "{nvrtc:?}");
    assert!(nvrtc.path.contains("libnvrtc.so"), "{nvrtc:?}");
    let nccl = cuda::nccl(&dirs).expect("the torch wheel ships NCCL");
    assert!(nccl.version.starts_with("2."), "{nccl:?}");
}

#[test]
fn programs_are_found_on_path() {
    assert!(tool::find_program("sh").is_some());
    assert!(tool::find_program("definitely-not-a-program-xyz").is_none());
    assert!(tool::find_program("/bin/sh").is_some());
    let d = std::env::temp_dir().join(format!("dv-doctor-test-{}", std::process::id()));
    std::fs::write(&d, "data").unwrap();
    let found = tool::find_program(d.to_str().unwrap());
    std::fs::remove_file(&d).unwrap();
    assert!(found.is_none(), "a plain file is not a program");
}

#[test]
fn simd_features_are_listed() {
    let f = cpu::simd_features();
    #[cfg(target_arch = "x86_64")]
    {
        assert!(f.iter().any(|(n, _)| *n == "avx2"));
        assert_eq!(f.iter().find(|(n, _)| *n == "avx2").map(|x| x.1), Some(std::is_x86_feature_detected!("avx2")));
    }
    let _ = f;
}
