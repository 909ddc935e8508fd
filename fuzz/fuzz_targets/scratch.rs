//! A scratch directory per fuzzing process, for the parsers that read files.
use std::path::PathBuf;
use std::sync::OnceLock;

/// `$TMPDIR/dv-fuzz-<pid>`, created once; the fuzzer writes each input here.
pub fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("dv-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("scratch dir");
        d
    })
}
