//! `out/recipe.lock` and the content hashes in it.
//!
//! A file's digest is the SHA-256 of its bytes; a directory's is the
//! SHA-256 of its sorted `(relative path, size, content digest)` list
//! (files over [`CONTENT_LIMIT`] enter by path and size alone, so that a
//! large featurize output is not read back in full); a missing path hashes
//! as `missing`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Files larger than this are hashed by size, not content (bytes).
pub(crate) const CONTENT_LIMIT: u64 = 256 << 20;

/// The lock file: per finished stage, what made it and what it wrote.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Lock {
    #[serde(default)]
    pub stages: BTreeMap<String, Entry>,
}

/// One finished stage.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Entry {
    /// SHA-256 of the parts below.
    pub key: String,
    /// `config`, `inputs`, `code`: the digest of each part of the key.
    pub parts: BTreeMap<String, String>,
    /// What it wrote, relative to `out`.
    pub outputs: Vec<String>,
    /// Digest of the outputs, read by the stages downstream.
    pub output_digest: String,
    /// RFC 3339 UTC.
    pub finished: String,
}

impl Lock {
    pub fn load(path: &Path) -> anyhow::Result<Lock> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).with_context(|| format!("reading {}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Lock::default()),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// Writes through a temporary file and a rename.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        crate::write_atomic(path, serde_json::to_string_pretty(self)?.as_bytes())
    }
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The key of `parts` (name → digest).
pub(crate) fn key_of(parts: &BTreeMap<String, String>) -> String {
    let mut h = Sha256::new();
    for (k, v) in parts {
        h.update(k.as_bytes());
        h.update([0]);
        h.update(v.as_bytes());
        h.update([0]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn file_digest(path: &Path, size: u64) -> anyhow::Result<String> {
    if size > CONTENT_LIMIT {
        return Ok(format!("size:{size}"));
    }
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).with_context(|| format!("reading {}", path.display()))?;
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The digest of a file or directory tree (see the module docs).
pub(crate) fn path_digest(path: &Path) -> anyhow::Result<String> {
    let Ok(meta) = std::fs::metadata(path) else { return Ok("missing".into()) };
    if meta.is_file() {
        return file_digest(path, meta.len());
    }
    let mut files = Vec::new();
    walk(path, path, &mut files)?;
    files.sort();
    let mut h = Sha256::new();
    for (rel, size) in files {
        let d = file_digest(&path.join(&rel), size)?;
        h.update(format!("{rel}\t{size}\t{d}\n").as_bytes());
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, u64)>) -> anyhow::Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let e = e?;
        let p = e.path();
        let meta = e.metadata()?;
        if meta.is_dir() {
            walk(root, &p, out)?;
        } else if !p.to_string_lossy().ends_with(".partial") {
            out.push((p.strip_prefix(root).unwrap_or(&p).to_string_lossy().into_owned(), meta.len()));
        }
    }
    Ok(())
}

/// The digest of several outputs under `out`, in order.
pub(crate) fn outputs_digest(out: &Path, outputs: &[String]) -> anyhow::Result<String> {
    let mut h = Sha256::new();
    for o in outputs {
        h.update(format!("{o}\t{}\n", path_digest(&out.join(o))?).as_bytes());
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// dv's version and the git revision it was built from, when known.
pub(crate) fn code_version() -> String {
    format!("dv {} / {}", env!("CARGO_PKG_VERSION"), dv_train::checkpoint::code_version())
}
