//! Corpora on object stores: the readers work on local files, so a corpus
//! given as an `s3://`, `gs://` or `az://` URL is first mirrored into a local
//! staging directory. Files already staged with the object's size are not
//! fetched again (a rerun or a second job on the same corpus downloads
//! nothing); each file is written under a temporary name and renamed, so a
//! killed job never leaves a truncated file that a rerun would trust.

use std::path::{Path, PathBuf};

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
}

/// Mirrors the corpus at `url` under `root` (in a directory named after the
/// URL). A URL ending in `.tsv` or `.csv` stages the table's directory, since
/// its audio paths are relative to it.
pub fn stage_corpus(url: &str, root: &Path, rt: &tokio::runtime::Runtime) -> Result<Staged, FeaturizeError> {
    let trimmed = url.trim_end_matches('/');
    let (dir_url, table) = match trimmed.rsplit_once('/') {
        Some((dir, name)) if name.ends_with(".tsv") || name.ends_with(".csv") => (dir.to_string(), Some(name)),
        _ => (trimmed.to_string(), None),
    };
    let name: String =
        dir_url.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect();
    let local = root.join(name);
    let io = |path: &Path, e: std::io::Error| FeaturizeError::Url {
        url: url.to_string(),
        reason: format!("staging {}: {e}", path.display()),
    };
    std::fs::create_dir_all(&local).map_err(|e| io(&local, e))?;
    let store = Store::open(&dir_url)?;
    let objects = rt.block_on(store.list_sizes(""))?;
    if objects.is_empty() {
        return Err(FeaturizeError::Url { url: url.to_string(), reason: "no objects under this prefix".into() });
    }
    let mut staged = Staged { local: local.clone(), files: objects.len(), ..Staged::default() };
    let todo: Vec<(String, u64)> = objects
        .into_iter()
        .filter(|(name, size)| std::fs::metadata(local.join(name)).map(|m| m.len() != *size).unwrap_or(true))
        .collect();
    let fetched: Vec<u64> = rt.block_on(
        futures::stream::iter(todo.into_iter().map(|(name, _)| {
            let store = store.clone();
            let dest = local.join(&name);
            async move {
                let bytes = store.get(&name).await?;
                let parent = dest.parent().unwrap_or(Path::new("."));
                std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
                let tmp = dest.with_extension("dv-staging");
                std::fs::write(&tmp, &bytes).map_err(|e| io(&tmp, e))?;
                std::fs::rename(&tmp, &dest).map_err(|e| io(&dest, e))?;
                Ok::<u64, FeaturizeError>(bytes.len() as u64)
            }
        }))
        .buffer_unordered(16)
        .try_collect(),
    )?;
    staged.fetched = fetched.len();
    staged.bytes_fetched = fetched.iter().sum();
    if let Some(t) = table {
        staged.local = local.join(t);
    }
    Ok(staged)
}
