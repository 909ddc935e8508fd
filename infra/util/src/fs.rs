//! Atomic file writes.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file that could not be written; `path` is the file the caller asked
/// for (the temporary file beside it is removed on failure).
#[derive(Debug, thiserror::Error)]
#[error("writing {}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The temporary file [`write_atomic`] writes before renaming it to `path`:
/// `.<name>.<pid>-<n>.partial` in the same directory (so the rename never
/// crosses a file system), hidden, unique per process and call, and ending
/// in `.partial`, which directory walkers that digest outputs pass over
/// (`dv recipe`'s stage keys).
pub fn temp_path(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.{}-{n}.partial", std::process::id()))
}

/// Writes `bytes` to `path` atomically: into [`temp_path`]`(path)`, synced
/// to disk (`fsync`), then renamed over `path`. A reader sees the old file
/// or the new one, and a process killed at any point leaves at most a
/// `.partial` file beside it, never a half-written `path`. On an error the
/// temporary file is removed and the error names `path`.
///
/// The directory is not synced: after a power loss the rename itself may be
/// lost (the old file remains), but never half of the new content.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let tmp = temp_path(path);
    let written = File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&tmp, path));
    renamed.map_err(|source| {
        let _ = std::fs::remove_file(&tmp);
        WriteError { path: path.to_path_buf(), source }
    })
}
