//! Reading and writing a voice package directory.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use safetensors::tensor::{Dtype, SafeTensors, TensorView};

use crate::config::{VoiceConfig, FORMAT_NAME, FORMAT_VERSION, KNOWN_KEYS};
use crate::error::VoiceError;
use crate::golden::Golden;
use crate::layout::expected_tensors;
use crate::tensor::Tensor;

/// File names inside a package directory.
pub const CONFIG_FILE: &str = "config.json";
pub const MODEL_FILE: &str = "model.safetensors";
pub const GOLDEN_FILE: &str = "golden.safetensors";

/// Named weights, as `model.safetensors` holds them.
pub type Weights = BTreeMap<String, Tensor>;

/// A validated voice package: the config, every weight with its exact
/// shape, and the golden parity data when the package has it.
#[derive(Debug, Clone)]
pub struct Voice {
    config: VoiceConfig,
    weights: Weights,
    golden: Option<Golden>,
    /// [`Voice::digest`].
    digest: Option<String>,
}

impl Voice {
    /// Checks `weights` against `config` (the same checks as [`Voice::read`])
    /// and wraps them, without touching the disk.
    pub fn new(config: VoiceConfig, weights: Weights) -> Result<Self, VoiceError> {
        config.validate()?;
        check_weights(&config, &weights)?;
        Ok(Self { config, weights, golden: None, digest: None })
    }

    /// Reads and validates the package in `dir`: `config.json`,
    /// `model.safetensors`, and `golden.safetensors` if present.
    pub fn read(dir: &Path) -> Result<Self, VoiceError> {
        let config = read_config(&dir.join(CONFIG_FILE))?;
        let weights = read_safetensors(&dir.join(MODEL_FILE))?;
        check_weights(&config, &weights)?;
        let golden_path = dir.join(GOLDEN_FILE);
        let golden = if golden_path.exists() { Some(Golden::read(&golden_path, &config)?) } else { None };
        let digest = crate::checksum::verify(dir)?;
        Ok(Self { config, weights, golden, digest: Some(digest) })
    }

    /// Validates `config` and `weights` and writes `config.json` and
    /// `model.safetensors` into `dir` (created if missing), each through a
    /// temporary file and a rename. An invalid package is never written.
    pub fn write(dir: &Path, config: &VoiceConfig, weights: &Weights) -> Result<(), VoiceError> {
        config.validate()?;
        check_weights(config, weights)?;
        fs::create_dir_all(dir).map_err(|source| VoiceError::Io { path: dir.to_path_buf(), source })?;
        let path = dir.join(MODEL_FILE);
        write_atomic(&path, &serialize_safetensors(&path, weights.iter().map(|(k, v)| (k.as_str(), v)))?)?;
        let path = dir.join(CONFIG_FILE);
        let mut json = serde_json::to_vec_pretty(config)
            .map_err(|e| VoiceError::Config { path: path.clone(), reason: e.to_string() })?;
        json.push(b'\n');
        write_atomic(&path, &json)?;
        crate::checksum::write(dir)
    }

    /// Writes this voice (and its golden data, if any) into `dir`.
    pub fn save(&self, dir: &Path) -> Result<(), VoiceError> {
        Self::write(dir, &self.config, &self.weights)?;
        if let Some(g) = &self.golden {
            g.write(dir, &self.config)?;
        }
        Ok(())
    }

    pub fn config(&self) -> &VoiceConfig {
        &self.config
    }

    pub fn weights(&self) -> &Weights {
        &self.weights
    }

    pub fn golden(&self) -> Option<&Golden> {
        self.golden.as_ref()
    }

    /// The digest of the files this voice was read from (hex SHA-256 over
    /// the SHA-256 of `config.json`, `model.safetensors` and
    /// `golden.safetensors`, whether or not the package has a
    /// `SHA256SUMS`): equal digests mean byte-identical packages, so a
    /// verdict on one holds for the other. `None` for a voice built in
    /// memory ([`Voice::new`]) or given other golden data
    /// ([`Voice::with_golden`]).
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// Attaches golden data after checking it against the config.
    pub fn with_golden(mut self, golden: Golden) -> Result<Self, VoiceError> {
        golden.check(&self.config)?;
        self.golden = Some(golden);
        self.digest = None;
        Ok(self)
    }

    /// The weight `name`. Every name of [`expected_tensors`] is present in a
    /// `Voice`, so this fails only for other names.
    pub fn tensor(&self, name: &str) -> Result<&Tensor, VoiceError> {
        self.weights.get(name).ok_or_else(|| VoiceError::MissingTensor { name: name.to_string(), expected: vec![] })
    }
}

/// Reads `config.json`: known keys only, then types, then values.
pub fn read_config(path: &Path) -> Result<VoiceConfig, VoiceError> {
    let text = fs::read_to_string(path).map_err(|source| VoiceError::Io { path: path.to_path_buf(), source })?;
    let config_err = |reason: String| VoiceError::Config { path: path.to_path_buf(), reason };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| config_err(e.to_string()))?;
    let obj = value.as_object().ok_or_else(|| config_err("the top level is not an object".into()))?;
    // The version first: a newer writer's keys are best explained by it.
    let format = obj.get("format").and_then(|v| v.as_str()).unwrap_or("");
    let version = obj.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
    if format != FORMAT_NAME || version != FORMAT_VERSION as u64 {
        return Err(VoiceError::Version { format: format.to_string(), version, expected: FORMAT_VERSION });
    }
    for (section, keys) in KNOWN_KEYS {
        let map = if section.is_empty() { Some(obj) } else { obj.get(*section).and_then(|v| v.as_object()) };
        for key in map.into_iter().flat_map(|m| m.keys()) {
            if !keys.contains(&key.as_str()) {
                let key = if section.is_empty() { key.clone() } else { format!("{section}.{key}") };
                return Err(VoiceError::UnknownKey { path: path.to_path_buf(), key });
            }
        }
    }
    let config: VoiceConfig = serde_json::from_value(value).map_err(|e| config_err(e.to_string()))?;
    config.validate()?;
    Ok(config)
}

/// Every tensor of `weights` matches [`expected_tensors`] exactly and is finite.
fn check_weights(config: &VoiceConfig, weights: &Weights) -> Result<(), VoiceError> {
    let expected = expected_tensors(config);
    for (name, shape) in &expected {
        let t = weights
            .get(name)
            .ok_or_else(|| VoiceError::MissingTensor { name: name.clone(), expected: shape.clone() })?;
        if t.shape() != shape.as_slice() {
            return Err(VoiceError::ShapeMismatch {
                name: name.clone(),
                expected: shape.clone(),
                got: t.shape().to_vec(),
            });
        }
        if let Some(index) = t.data().iter().position(|v| !v.is_finite()) {
            return Err(VoiceError::NonFinite { name: name.clone(), index });
        }
    }
    if weights.len() != expected.len() {
        for (name, t) in weights {
            if !expected.iter().any(|(n, _)| n == name) {
                return Err(VoiceError::UnexpectedTensor { name: name.clone(), shape: t.shape().to_vec() });
            }
        }
    }
    Ok(())
}

/// Reads every tensor of a safetensors file: F32, or F16 (read back as
/// float32; written where lossless, see [`Tensor::is_half_exact`]).
pub(crate) fn read_safetensors(path: &Path) -> Result<Weights, VoiceError> {
    let bytes = fs::read(path).map_err(|source| VoiceError::Io { path: path.to_path_buf(), source })?;
    let st = SafeTensors::deserialize(&bytes)
        .map_err(|e| VoiceError::Safetensors { path: path.to_path_buf(), reason: read_reason(&e, bytes.len()) })?;
    let mut out = Weights::new();
    for (name, view) in st.iter() {
        let data: Vec<f32> = match view.dtype() {
            Dtype::F32 => view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
            Dtype::F16 => {
                view.data().chunks_exact(2).map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32()).collect()
            }
            other => return Err(VoiceError::Dtype { name: name.to_string(), dtype: format!("{other:?}") }),
        };
        out.insert(name.to_string(), Tensor::new(name, view.shape().to_vec(), data)?);
    }
    Ok(out)
}

/// Why a safetensors file could not be read, in words: the usual cause, a
/// file cut short (a copy or download that stopped), said as such.
fn read_reason(e: &safetensors::SafeTensorError, len: usize) -> String {
    use safetensors::SafeTensorError as E;
    match e {
        E::HeaderTooSmall | E::InvalidHeaderLength | E::MetadataIncompleteBuffer => {
            format!("{e:?}: its {len} bytes end before what its header declares (a truncated copy?)")
        }
        _ => format!("{e:?}"),
    }
}

/// Serializes named tensors as a safetensors file, each in half precision
/// where that is lossless and in float32 otherwise.
pub(crate) fn serialize_safetensors<'a>(
    path: &Path,
    tensors: impl Iterator<Item = (&'a str, &'a Tensor)>,
) -> Result<Vec<u8>, VoiceError> {
    /// A tensor's name, shape and stored bytes.
    type Stored<'a> = (&'a str, Vec<usize>, Dtype, Vec<u8>);
    let bytes: Vec<Stored<'_>> = tensors
        .map(|(name, t)| {
            let (dtype, data) = t.to_le_bytes();
            (name, t.shape().to_vec(), dtype, data)
        })
        .collect();
    let mut views = Vec::with_capacity(bytes.len());
    for (name, shape, dtype, data) in &bytes {
        let view = TensorView::new(*dtype, shape.clone(), data)
            .map_err(|e| VoiceError::Safetensors { path: path.to_path_buf(), reason: format!("{name}: {e:?}") })?;
        views.push((*name, view));
    }
    safetensors::tensor::serialize(views, &None)
        .map_err(|e| VoiceError::Safetensors { path: path.to_path_buf(), reason: format!("{e:?}") })
}

/// Writes a package file atomically ([`dv_util::write_atomic`]).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), VoiceError> {
    dv_util::write_atomic(path, bytes).map_err(|e| VoiceError::Io { path: e.path, source: e.source })
}
