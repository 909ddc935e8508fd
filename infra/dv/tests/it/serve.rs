//! `dv serve` runs the `dv-serve` binary next to `dv` with the same
//! arguments, and says so clearly when it is missing.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

/// A copy of `dv` alone in a folder (a link would resolve to the build's).
fn lone_dv(dir: &std::path::Path) -> std::path::PathBuf {
    let dv = dir.join("dv");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_dv"), &dv).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_dv"), &dv).unwrap();
    }
    dv
}

#[test]
fn serve_execs_dv_serve_next_to_dv_with_the_same_arguments() {
    let d = tempfile::tempdir().unwrap();
    let dv = lone_dv(d.path());
    let out = Command::new(&dv).args(["serve", "--port", "0"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("dv-serve is missing") && err.contains("cargo build -p dv-serve"), "{err}");
    // A stand-in server that prints its arguments and its pid's name.
    let fake = d.path().join("dv-serve");
    std::fs::write(&fake, "#!/bin/sh\necho \"args: $*\"\nexit 3\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(&dv).args(["serve", "--port", "9", "--help", "-x", "a b"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "args: --port 9 --help -x a b\n");
    assert_eq!(out.status.code(), Some(3), "the server's exit status is dv's");
}
