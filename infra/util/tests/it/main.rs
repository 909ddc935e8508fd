//! dv-util's tests: the atomic write and SplitMix64.

use dv_util::{splitmix64, temp_path, write_atomic, SplitMix64};

#[test]
fn write_atomic_replaces_the_file_and_leaves_no_temporary() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("out.json");
    write_atomic(&path, b"first").unwrap();
    write_atomic(&path, b"second").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"second");
    let names: Vec<String> =
        std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(names, ["out.json"]);
}

#[test]
fn temporary_is_hidden_beside_the_target_and_unique() {
    let path = std::path::Path::new("/some/dir/a.wav");
    let (t1, t2) = (temp_path(path), temp_path(path));
    assert_ne!(t1, t2);
    assert_eq!(t1.parent(), path.parent());
    let name = t1.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with(".a.wav.") && name.ends_with(".partial"), "{name}");
}

#[test]
fn a_failed_write_names_the_target_and_leaves_nothing() {
    let d = tempfile::tempdir().unwrap();
    // The target is a non-empty directory: the rename fails after the write.
    let path = d.path().join("taken");
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("x"), b"x").unwrap();
    let e = write_atomic(&path, b"data").unwrap_err();
    assert_eq!(e.path, path);
    assert!(e.to_string().contains("taken"), "{e}");
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1, "the temporary file is removed");
    // A missing directory fails at the create, naming the target.
    let missing = d.path().join("no/such/file");
    assert_eq!(write_atomic(&missing, b"").unwrap_err().path, missing);
}

#[test]
fn splitmix64_matches_the_reference_outputs() {
    // The first outputs for seed 0 of the reference C implementation
    // (Vigna's splitmix64.c).
    let mut g = SplitMix64::new(0);
    assert_eq!(g.next_u64(), 0xe220_a839_7b1d_cdaf);
    assert_eq!(g.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    assert_eq!(g.next_u64(), 0x06c4_5d18_8009_454f);
    assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
    let mut h = SplitMix64::new(12345);
    assert_eq!(h.next_u64(), splitmix64(12345));
    assert_eq!(h.next_u64(), splitmix64(12345u64.wrapping_add(0x9e37_79b9_7f4a_7c15)));
}
