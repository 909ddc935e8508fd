//! The inputs the `run_config` and `recipe_file` fuzz targets found crashing
//! (`fuzz/regressions/<target>/`), replayed through the calls that panicked:
//! each must now be refused with an error naming what to change.

use std::path::{Path, PathBuf};

use dv_config::RunConfig;

fn inputs(target: &str) -> Vec<(PathBuf, String)> {
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut v: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            (p, text)
        })
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no inputs in {}", dir.display());
    v
}

#[test]
fn run_config_regressions_are_errors() {
    for (path, text) in inputs("run_config") {
        let e = RunConfig::from_toml("regression.toml", &text).map(|_| ()).unwrap_err();
        assert!(e.to_string().starts_with("config regression.toml: "), "{}: {e}", path.display());
    }
}
