//! The output location: a local directory or an object-store URL.

use std::sync::Arc;

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use url::Url;

use crate::FeaturizeError;

/// An object store and the prefix the job writes under.
#[derive(Clone)]
pub struct Store {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    url: String,
}

impl Store {
    /// Opens a directory path or a `file://`, `s3://`, `gs://` or `az://`
    /// URL. Cloud credentials and endpoints come from the environment
    /// (`AWS_ENDPOINT`, `AWS_ACCESS_KEY_ID`, `AWS_ALLOW_HTTP`, …), as the
    /// `object_store` builders read them.
    pub fn open(location: &str) -> Result<Store, FeaturizeError> {
        let bad = |reason: String| FeaturizeError::Url { url: location.to_string(), reason };
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
        let (store, prefix) = object_store::parse_url_opts(&url, options)?;
        Ok(Store { store: Arc::from(store), prefix, url: location.to_string() })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    fn path(&self, name: &str) -> Path {
        name.split('/').fold(self.prefix.clone(), |p, part| p.join(part))
    }

    /// Writes one object in a single put.
    pub async fn put(&self, name: &str, bytes: Vec<u8>) -> Result<(), FeaturizeError> {
        self.store.put(&self.path(name), PutPayload::from(bytes)).await?;
        Ok(())
    }

    /// Reads one object.
    pub async fn get(&self, name: &str) -> Result<Vec<u8>, FeaturizeError> {
        Ok(self.store.get(&self.path(name)).await?.bytes().await?.to_vec())
    }

    /// Names (relative to the prefix) of the objects under `dir`.
    pub async fn list(&self, dir: &str) -> Result<Vec<String>, FeaturizeError> {
        use futures::TryStreamExt;
        let base = self.path(dir);
        let metas: Vec<_> = self.store.list(Some(&base)).try_collect().await?;
        let prefix_len = self.prefix.parts().count();
        let mut names: Vec<String> = metas
            .into_iter()
            .map(|m| m.location.parts().skip(prefix_len).map(|p| p.as_ref().to_string()).collect::<Vec<_>>().join("/"))
            .collect();
        names.sort();
        Ok(names)
    }
}
