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
//! * A failed request to an object store (an HTTP 5xx, a connection error,
//!   a timeout) is retried with exponential backoff and jitter (from 100 ms,
//!   doubling, at most 15 s apart) up to [`StoreOptions::max_retries`] times
//!   within [`StoreOptions::retry_timeout`]; then the error names the
//!   location, the object and the last failure. Each request gives up after
//!   [`StoreOptions::request_timeout`]. `DV_STORE_MAX_RETRIES`,
//!   `DV_STORE_RETRY_TIMEOUT_S` and `DV_STORE_REQUEST_TIMEOUT_S` override the
//!   defaults (10 retries, 180 s, 30 s).
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, ObjectStoreScheme, PutPayload, RetryConfig};
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
    /// The store refused or failed a request (after its retries). The
    /// message carries the causes below `object_store`'s own (a timeout, a
    /// refused connection), which its message leaves out.
    #[error("{url}: {name:?}: {}", chain(source))]
    Request {
        url: String,
        name: String,
        #[source]
        source: object_store::Error,
    },
}

/// An error's message followed by each of its sources' that it does not
/// already contain.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !out.contains(&text) {
            out = format!("{out}: {text}");
        }
        next = cause.source();
    }
    out
}

/// How a store is reached: its builder's settings and how failed requests
/// are retried. Local directories ignore the retry settings.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Retries of a failed request (5xx, connection error, timeout) before
    /// the error is returned; 0 turns retrying off.
    pub max_retries: usize,
    /// No retry starts later than this after the first attempt.
    pub retry_timeout: Duration,
    /// One attempt's limit, connection to last byte.
    pub request_timeout: Duration,
    /// Builder settings as `object_store` names them (`aws_endpoint`,
    /// `allow_http`, …); keys a store does not know are ignored.
    pub config: Vec<(String, String)>,
}

impl Default for StoreOptions {
    /// object_store's defaults: 10 retries within 180 s, 30 s a request.
    fn default() -> Self {
        Self {
            max_retries: 10,
            retry_timeout: Duration::from_secs(180),
            request_timeout: Duration::from_secs(30),
            config: Vec::new(),
        }
    }
}

impl StoreOptions {
    /// The defaults, every environment variable as a builder setting (names
    /// lower-cased; `AWS_ALLOW_HTTP` also as `allow_http`), and the
    /// `DV_STORE_*` overrides. A `DV_STORE_*` value that is not a number is
    /// a [`StoreError::Location`] naming the variable.
    pub fn from_env() -> Result<Self, StoreError> {
        let mut o =
            Self { config: std::env::vars().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect(), ..Self::default() };
        if let Ok(v) = std::env::var("AWS_ALLOW_HTTP") {
            o.config.push(("allow_http".into(), v));
        }
        let var = |name: &str| -> Result<Option<f64>, StoreError> {
            match std::env::var(name) {
                Err(_) => Ok(None),
                Ok(v) => match v.trim().parse::<f64>() {
                    Ok(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
                    _ => Err(StoreError::Location {
                        url: format!("${name}"),
                        reason: format!("{v:?} is not a non-negative number"),
                    }),
                },
            }
        };
        if let Some(n) = var("DV_STORE_MAX_RETRIES")? {
            o.max_retries = n as usize;
        }
        if let Some(s) = var("DV_STORE_RETRY_TIMEOUT_S")? {
            o.retry_timeout = Duration::from_secs_f64(s);
        }
        if let Some(s) = var("DV_STORE_REQUEST_TIMEOUT_S")? {
            o.request_timeout = Duration::from_secs_f64(s);
        }
        Ok(o)
    }

    fn retry(&self) -> RetryConfig {
        RetryConfig { max_retries: self.max_retries, retry_timeout: self.retry_timeout, ..RetryConfig::default() }
    }
}

/// Builds an object-store client from `url` and `options`, the way
/// `object_store::parse_url_opts` does, with the retry settings applied.
macro_rules! build {
    ($builder:ty, $url:expr, $options:expr) => {{
        let timeout = format!("{}ms", $options.request_timeout.as_millis());
        let builder =
            $options.config.iter().map(|(k, v)| (k.as_str(), v.as_str())).chain([("timeout", timeout.as_str())]).fold(
                <$builder>::new().with_url($url.to_string()),
                |b, (key, value)| match key.to_ascii_lowercase().parse() {
                    Ok(k) => b.with_config(k, value),
                    Err(_) => b,
                },
            );
        Box::new(builder.with_retry($options.retry()).build()?) as Box<dyn ObjectStore>
    }};
}

fn client(url: &Url, options: &StoreOptions) -> Result<(Box<dyn ObjectStore>, Path), object_store::Error> {
    let (scheme, prefix) = ObjectStoreScheme::parse(url)?;
    let store = match scheme {
        ObjectStoreScheme::AmazonS3 => build!(AmazonS3Builder, url, options),
        ObjectStoreScheme::GoogleCloudStorage => build!(GoogleCloudStorageBuilder, url, options),
        ObjectStoreScheme::MicrosoftAzure => build!(MicrosoftAzureBuilder, url, options),
        _ => return object_store::parse_url_opts(url, options.config.iter().map(|(k, v)| (k, v.clone()))),
    };
    Ok((store, prefix))
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
    /// `gs://` or `az://` URL, with [`StoreOptions::from_env`].
    pub fn open(location: &str) -> Result<Store, StoreError> {
        Self::open_with(location, &StoreOptions::from_env()?)
    }

    /// [`Store::open`] with the given options instead of the environment's.
    pub fn open_with(location: &str, options: &StoreOptions) -> Result<Store, StoreError> {
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
        let (store, prefix) = client(&url, options).map_err(|e| bad(e.to_string()))?;
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
            source => StoreError::Request { url: self.url.clone(), name: name.into(), source },
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
        Ok(self.list_objects(dir).await?.into_iter().map(|o| (o.name, o.size)).collect())
    }

    /// Every object under `dir` (`""` for all of them) with its size and
    /// entity tag, sorted by name.
    pub async fn list_objects(&self, dir: &str) -> Result<Vec<ObjectInfo>, StoreError> {
        let base = self.path(dir);
        let metas: Vec<_> = self.store.list(Some(&base)).try_collect().await.map_err(|e| self.err(dir, e))?;
        let prefix_len = self.prefix.parts().count();
        let mut out: Vec<ObjectInfo> = metas
            .into_iter()
            .map(|m| {
                let parts: Vec<String> = m.location.parts().skip(prefix_len).map(|p| p.as_ref().to_string()).collect();
                ObjectInfo { name: parts.join("/"), size: m.size, e_tag: m.e_tag }
            })
            .collect();
        out.sort();
        Ok(out)
    }
}

/// One object of a listing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectInfo {
    /// The name relative to the store's prefix.
    pub name: String,
    /// Bytes.
    pub size: u64,
    /// The store's entity tag: it changes when the object's content does
    /// (S3's ETag; on local disks `object_store` derives it from the file's
    /// inode, size and modification time). `None` where the store gives none.
    pub e_tag: Option<String>,
}
