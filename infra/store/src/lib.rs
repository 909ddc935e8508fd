//! Where deepvoice-rs reads and writes: a local directory or an object-store
//! URL (`file://`, `s3://`, `gs://`, `az://`), one small async API over the
//! `object_store` crate. Featurization shards and training checkpoints both
//! go through it.
//!
//! # Contract
//!
//! * Names are `/`-separated and relative to the location's prefix.
//! * [`Store::put`] writes one object in a single request: on object stores
//!   the object appears whole or not at all; on local disks `object_store`
//!   writes a temporary file and renames it. A writer killed at any moment
//!   leaves no partial object visible; this is what makes jobs resumable.
//! * Credentials and endpoints come from the environment, as the
//!   `object_store` builders read them (`AWS_ENDPOINT`, `AWS_ACCESS_KEY_ID`,
//!   `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`; `AWS_ALLOW_HTTP=true` for a local
//!   S3-compatible server; `GOOGLE_*`, `AZURE_*`).
#![forbid(unsafe_code)]

use std::sync::Arc;

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use url::Url;

/// Errors of a storage location.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The location does not parse or cannot be created.
    #[error("{url}: {reason}")]
    Location { url: String, reason: String },
    /// An object that was asked for does not exist.
    #[error("{url}: no object {name:?}")]
    NotFound { url: String, name: String },
    /// The store refused or failed a request.
    #[error("{url}: {source}")]
    Request {
        url: String,
        #[source]
        source: object_store::Error,
    },
}

/// An object store and the prefix everything is read and written under.
#[derive(Clone)]
pub struct Store {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    url: String,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.url)
    }
}

impl Store {
    /// Opens a directory path (created if missing) or a `file://`, `s3://`,
    /// `gs://` or `az://` URL.
    pub fn open(location: &str) -> Result<Store, StoreError> {
        let bad = |reason: String| StoreError::Location { url: location.to_string(), reason };
        let url = if location.contains("://") {
            Url::parse(location).map_err(|e| bad(e.to_string()))?
        } else {
            std::fs::create_dir_all(location).map_err(|e| bad(e.to_string()))?;
            let abs = std::fs::canonicalize(location).map_err(|e| bad(e.to_string()))?;
            Url::from_directory_path(&abs).map_err(|_| bad("not an absolute directory".into()))?
        };
        if url.scheme() == "file" {
            let dir = url.to_file_path().map_err(|_| bad("not a local path".into()))?;
            std::fs::create_dir_all(&dir).map_err(|e| bad(e.to_string()))?;
        }
        let mut options: Vec<(String, String)> = std::env::vars().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
        if let Ok(v) = std::env::var("AWS_ALLOW_HTTP") {
            options.push(("allow_http".into(), v));
        }
        let (store, prefix) = object_store::parse_url_opts(&url, options).map_err(|e| bad(e.to_string()))?;
        Ok(Store { store: Arc::from(store), prefix, url: location.to_string() })
    }

    /// The location as the user gave it.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn path(&self, name: &str) -> Path {
        name.split('/').filter(|p| !p.is_empty()).fold(self.prefix.clone(), |p, part| p.join(part))
    }

    fn err(&self, name: &str, e: object_store::Error) -> StoreError {
        match e {
            object_store::Error::NotFound { .. } => StoreError::NotFound { url: self.url.clone(), name: name.into() },
            source => StoreError::Request { url: self.url.clone(), source },
        }
    }

    /// Writes one object in a single put.
    pub async fn put(&self, name: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        self.store.put(&self.path(name), PutPayload::from(bytes)).await.map_err(|e| self.err(name, e))?;
        Ok(())
    }

    /// Reads one object.
    pub async fn get(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        let r = self.store.get(&self.path(name)).await.map_err(|e| self.err(name, e))?;
        Ok(r.bytes().await.map_err(|e| self.err(name, e))?.to_vec())
    }

    /// Deletes one object (a missing object is not an error).
    pub async fn delete(&self, name: &str) -> Result<(), StoreError> {
        match self.store.delete(&self.path(name)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err(name, e)),
        }
    }

    /// Names (relative to the prefix) of the objects under `dir`, sorted.
    pub async fn list(&self, dir: &str) -> Result<Vec<String>, StoreError> {
        Ok(self.list_sizes(dir).await?.into_iter().map(|(n, _)| n).collect())
    }

    /// Names (relative to the prefix) and sizes in bytes of every object
    /// under `dir` (`""` for all of them), sorted by name.
    pub async fn list_sizes(&self, dir: &str) -> Result<Vec<(String, u64)>, StoreError> {
        let base = self.path(dir);
        let metas: Vec<_> = self.store.list(Some(&base)).try_collect().await.map_err(|e| self.err(dir, e))?;
        let prefix_len = self.prefix.parts().count();
        let mut out: Vec<(String, u64)> = metas
            .into_iter()
            .map(|m| {
                let parts: Vec<String> = m.location.parts().skip(prefix_len).map(|p| p.as_ref().to_string()).collect();
                (parts.join("/"), m.size)
            })
            .collect();
        out.sort();
        Ok(out)
    }
}
