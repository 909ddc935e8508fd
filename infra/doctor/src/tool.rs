//! External programs a recipe needs.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

/// Finds an executable by name on `PATH`, or checks a path given with a `/`.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let is_exec = |p: &Path| {
        p.is_file()
            && std::fs::metadata(p).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.permissions().mode() & 0o111 != 0
            })
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return is_exec(&p).then_some(p);
    }
    std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|d| d.join(name)).find(|p| is_exec(p)))
}
