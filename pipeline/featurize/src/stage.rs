//! Corpora on object stores: the readers work on local files, so a corpus
//! given as an `s3://`, `gs://` or `az://` URL is first mirrored into a local
//! staging directory. Files already staged with the object's size and entity
//! tag (S3's ETag, recorded in `<dir>.listing` beside the mirror) are not
//! fetched again (a rerun or a second job on the same corpus downloads
//! nothing), an object rewritten in place is, and a staged file whose object
//! is gone is removed; each file is written with [`dv_util::write_atomic`]
//! (a temporary `.partial` file beside it, synced, then renamed), so a killed
//! job never leaves a truncated file that a rerun would trust.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use dv_store::ObjectInfo;
use futures::{StreamExt, TryStreamExt};

use crate::{FeaturizeError, Store};

/// Whether `corpus` names an object-store location that must be staged.
pub fn is_remote(corpus: &str) -> bool {
    corpus.split_once("://").is_some_and(|(scheme, _)| scheme != "file")
}

/// What staging did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Staged {
    /// The local path to read: the mirrored directory, or the mirrored
    /// table when the URL named a `.tsv`/`.csv` manifest.
    pub local: PathBuf,
    pub files: usize,
    pub fetched: usize,
    pub bytes_fetched: u64,
    /// Staged files removed because their objects are gone.
    pub removed: usize,
}

/// Splits a corpus URL into the directory to mirror and, when the URL names
/// a `.tsv`/`.csv` table, the table's name in it.
fn split(url: &str) -> (String, Option<&str>) {
    let trimmed = url.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((dir, name)) if name.ends_with(".tsv") || name.ends_with(".csv") => (dir.to_string(), Some(name)),
        _ => (trimmed.to_string(), None),
    }
}

/// The objects [`stage_corpus`] mirrors for `url` (names relative to the
/// corpus's directory, sizes, entity tags), sorted by name; a prefix with
/// nothing under it is an error naming the URL.
pub fn corpus_listing(url: &str, rt: &tokio::runtime::Runtime) -> Result<Vec<ObjectInfo>, FeaturizeError> {
    let (dir_url, _) = split(url);
    let objects = rt.block_on(Store::open(&dir_url)?.list_objects(""))?;
    if objects.is_empty() {
        return Err(FeaturizeError::Url { url: url.to_string(), reason: "no objects under this prefix".into() });
    }
    Ok(objects)
}

/// A runtime for the blocking entry points of this module.
pub fn runtime() -> Result<tokio::runtime::Runtime, FeaturizeError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| FeaturizeError::Shard(format!("tokio runtime: {e}")))
}

/// The listing file's lines: `name\tsize\te_tag`.
fn listing_text(objects: &[ObjectInfo]) -> String {
    objects.iter().map(|o| format!("{}\t{}\t{}\n", o.name, o.size, o.e_tag.as_deref().unwrap_or(""))).collect()
}

/// Mirrors the corpus at `url` under `root` (in a directory named after the
/// URL). A URL ending in `.tsv` or `.csv` stages the table's directory, since
/// its audio paths are relative to it.
pub fn stage_corpus(url: &str, root: &Path, rt: &tokio::runtime::Runtime) -> Result<Staged, FeaturizeError> {
    let (dir_url, table) = split(url);
    let name: String =
        dir_url.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect();
    let local = root.join(&name);
    let listing = root.join(format!("{name}.listing"));
    let io = |path: &Path, e: std::io::Error| FeaturizeError::Url {
        url: url.to_string(),
        reason: format!("staging {}: {e}", path.display()),
    };
    std::fs::create_dir_all(&local).map_err(|e| io(&local, e))?;
    let store = Store::open(&dir_url)?;
    let objects = corpus_listing(url, rt)?;
    // The entity tags the staged files were fetched with.
    let before: HashMap<String, String> = std::fs::read_to_string(&listing)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            Some((f.next()?.to_string(), f.nth(1)?.to_string()))
        })
        .collect();
    let mut staged = Staged { local: local.clone(), files: objects.len(), ..Staged::default() };
    let todo: Vec<String> = objects
        .iter()
        .filter(|o| {
            let same_size = std::fs::metadata(local.join(&o.name)).is_ok_and(|m| m.len() == o.size);
            let same_tag = o.e_tag.as_ref().is_none_or(|t| before.get(&o.name) == Some(t));
            !(same_size && same_tag)
        })
        .map(|o| o.name.clone())
        .collect();
    // The listing is rewritten only once every object is in place, so a
    // killed job's rerun checks the same tags again.
    if !todo.is_empty() {
        let _ = std::fs::remove_file(&listing);
    }
    let fetched: Vec<u64> = rt.block_on(
        futures::stream::iter(todo.into_iter().map(|name| {
            let store = store.clone();
            let dest = local.join(&name);
            async move {
                let bytes = store.get(&name).await?;
                let parent = dest.parent().unwrap_or(Path::new("."));
                std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
                dv_util::write_atomic(&dest, &bytes).map_err(|e| io(&dest, e.source))?;
                Ok::<u64, FeaturizeError>(bytes.len() as u64)
            }
        }))
        .buffer_unordered(16)
        .try_collect(),
    )?;
    staged.fetched = fetched.len();
    staged.bytes_fetched = fetched.iter().sum();
    staged.removed = remove_stale(&local, &local, &objects).map_err(|e| io(&local, e))?;
    std::fs::write(&listing, listing_text(&objects)).map_err(|e| io(&listing, e))?;
    if let Some(t) = table {
        staged.local = local.join(t);
    }
    Ok(staged)
}

/// Removes the files under `dir` that no object of `objects` names; returns
/// how many.
fn remove_stale(root: &Path, dir: &Path, objects: &[ObjectInfo]) -> std::io::Result<usize> {
    let mut removed = 0;
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let p = e.path();
        if e.file_type()?.is_dir() {
            removed += remove_stale(root, &p, objects)?;
            continue;
        }
        if p.extension().is_some_and(|x| x == "partial") {
            continue; // another job's fetch in flight (dv_util::temp_path)
        }
        let rel = p.strip_prefix(root).unwrap_or(&p).to_string_lossy().replace('\\', "/");
        if objects.binary_search_by(|o| o.name.as_str().cmp(&rel)).is_err() {
            std::fs::remove_file(&p)?;
            removed += 1;
        }
    }
    Ok(removed)
}
