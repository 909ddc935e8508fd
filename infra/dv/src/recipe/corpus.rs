//! The recipe's corpus on this machine. A local path (or `file://` URL) is
//! read where it is; an object-store URL (`s3://`, `gs://`, `az://`: any
//! location dv-store opens, credentials from the environment only) is
//! mirrored once into `out/corpus-cache/` with `dv_featurize::stage_corpus`:
//! an object is fetched again only when its size or entity tag (S3's ETag)
//! differs from the copy's, and a copy whose object is gone is removed.
//!
//! The corpus's digest, the inputs part of the inspect and featurize keys,
//! is the content digest of the local tree, or for an object store the
//! SHA-256 of its listing (every object's name, size and entity tag), taken
//! with one LIST request: an unchanged bucket is a no-op without a download.

use std::path::PathBuf;

use super::config::Loaded;
use super::lock::{path_digest, sha256_hex};
use super::stage::StageLog;

/// Where the corpus is.
enum Source {
    Local(PathBuf),
    Remote(String),
}

fn source(loaded: &Loaded) -> Source {
    let c = loaded.resolve(&loaded.recipe.corpus);
    if dv_featurize::is_remote(&c) {
        return Source::Remote(c);
    }
    Source::Local(PathBuf::from(c.strip_prefix("file://").unwrap_or(&c)))
}

/// The digest of the corpus (module docs).
pub(crate) fn digest(loaded: &Loaded) -> anyhow::Result<String> {
    match source(loaded) {
        Source::Local(p) => path_digest(&p),
        Source::Remote(url) => {
            let objects = dv_featurize::corpus_listing(&url, &dv_featurize::runtime()?)?;
            let mut text = String::new();
            for o in objects {
                text.push_str(&format!("{}\t{}\t{}\n", o.name, o.size, o.e_tag.as_deref().unwrap_or("")));
            }
            Ok(sha256_hex(text.as_bytes()))
        }
    }
}

/// The corpus as a local path for the readers: the recipe's, or the
/// object store's mirror under `out/corpus-cache/`, brought up to date
/// (what staging did goes to `log`).
pub(crate) fn local(loaded: &Loaded, log: &mut StageLog) -> anyhow::Result<String> {
    match source(loaded) {
        Source::Local(p) => Ok(p.display().to_string()),
        Source::Remote(url) => {
            let root = loaded.out().join("corpus-cache");
            let s = dv_featurize::stage_corpus(&url, &root, &dv_featurize::runtime()?)?;
            log.line(&format!(
                "staged {} objects of {url} in {}: {} fetched ({:.1} MB), {} removed",
                s.files,
                s.local.display(),
                s.fetched,
                s.bytes_fetched as f64 / 1e6,
                s.removed
            ));
            Ok(s.local.display().to_string())
        }
    }
}
