//! Checkpoints: everything a run needs to continue exactly where it stopped,
//! in one safetensors object written with one put.
//!
//! Tensors: `model.<name>` (parameters), `adam.m.<name>` and `adam.v.<name>`
//! (Adam's moments), all float32 little-endian, except in a model-only
//! checkpoint written in half precision ([`encode_half`], `dv export
//! --model-only --half`: IEEE binary16, read back as float32). Metadata: `dv.state` (JSON
//! [`CheckpointState`]: step, Adam's step count, best validation loss, the
//! run config, the code version and the seed; the sampler and dropout masks
//! are pure functions of seed and step, so these are the whole RNG and data
//! state) and `dv.crc32` (CRC-32 of every tensor's bytes in name order, so a
//! truncated or corrupted object is detected rather than loaded).
//!
//! Names under the checkpoint location: `step-<10 digits>.safetensors` for
//! the last `keep_last` checkpoints, `best.safetensors` for the best
//! validation loss so far. Loading walks from the newest step back and skips
//! (and reports) any checkpoint that does not verify.

use std::collections::HashMap;
use std::path::Path;

use dv_torch::tch;
use dv_torch::tch::{Kind, Tensor};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use serde::{Deserialize, Serialize};

use crate::{RunConfig, TrainError};

/// The non-tensor state of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointState {
    /// Steps completed: training resumes at this step.
    pub step: u64,
    /// Adam's update count (equals `step` unless steps were skipped).
    pub adam_step: u64,
    /// Best validation loss so far.
    pub best: Option<f64>,
    /// The run configuration, TOML.
    pub config: String,
    /// `dv-train` version and git revision when known.
    pub code_version: String,
    pub seed: u64,
    /// The MLflow run this training run logs to, so a resumed run continues it.
    #[serde(default)]
    pub mlflow_run_id: Option<String>,
}

/// What a checkpoint holds, by tensor name.
pub struct CheckpointData {
    pub state: CheckpointState,
    pub tensors: HashMap<String, Tensor>,
}

/// The version string stored in checkpoints.
pub fn code_version() -> String {
    format!("dv-train {} ({})", env!("CARGO_PKG_VERSION"), option_env!("DV_GIT_REV").unwrap_or("unknown revision"))
}

fn bad(name: &str, reason: impl std::fmt::Display) -> TrainError {
    TrainError::Checkpoint { name: name.to_string(), reason: reason.to_string() }
}

/// Serializes named float32 tensors and the state.
pub fn encode(state: &CheckpointState, tensors: &[(String, Tensor)]) -> Result<Vec<u8>, TrainError> {
    encode_as(state, tensors, Dtype::F32)
}

/// [`encode`] with every tensor rounded to half precision (IEEE binary16,
/// round to nearest even): half the bytes, for shipping a model's weights.
/// [`decode`] reads it back as float32; the values are the rounded ones.
pub fn encode_half(state: &CheckpointState, tensors: &[(String, Tensor)]) -> Result<Vec<u8>, TrainError> {
    encode_as(state, tensors, Dtype::F16)
}

fn encode_as(state: &CheckpointState, tensors: &[(String, Tensor)], dtype: Dtype) -> Result<Vec<u8>, TrainError> {
    let mut sorted: Vec<&(String, Tensor)> = tensors.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut crc = crc32fast::Hasher::new();
    let mut bytes: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::with_capacity(sorted.len());
    for (name, t) in sorted {
        let t = t.f_detach()?.f_to_device(tch::Device::Cpu)?.f_to_kind(Kind::Float)?.f_contiguous()?;
        let values = Vec::<f32>::try_from(&t.f_flatten(0, -1)?)?;
        let data: Vec<u8> = match dtype {
            Dtype::F16 => {
                if let Some(v) = values.iter().find(|v| v.is_finite() && v.abs() > f32::from(half::f16::MAX)) {
                    return Err(bad("(new)", format!("{name}: {v} does not fit half precision")));
                }
                values.iter().flat_map(|&v| half::f16::from_f32(v).to_le_bytes()).collect()
            }
            _ => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        };
        crc.update(&data);
        bytes.push((name.clone(), t.size().iter().map(|&d| d as usize).collect(), data));
    }
    let views: Vec<(String, TensorView<'_>)> = bytes
        .iter()
        .map(|(n, shape, data)| TensorView::new(dtype, shape.clone(), data).map(|v| (n.clone(), v)))
        .collect::<Result<_, _>>()
        .map_err(|e| bad("(new)", e))?;
    let meta = HashMap::from([
        ("dv.state".to_string(), serde_json::to_string(state).map_err(|e| bad("(new)", e))?),
        ("dv.crc32".to_string(), format!("{:08x}", crc.finalize())),
    ]);
    safetensors::tensor::serialize(views, &Some(meta)).map_err(|e| bad("(new)", e))
}

/// Parses and verifies a checkpoint; `name` is used in errors.
pub fn decode(name: &str, bytes: &[u8]) -> Result<CheckpointData, TrainError> {
    let (_, meta) =
        SafeTensors::read_metadata(bytes).map_err(|e| bad(name, format!("not a safetensors object ({e})")))?;
    let info = meta.metadata().clone().unwrap_or_default();
    let state: CheckpointState = serde_json::from_str(info.get("dv.state").ok_or_else(|| bad(name, "no dv.state"))?)
        .map_err(|e| bad(name, format!("dv.state: {e}")))?;
    let want = info.get("dv.crc32").ok_or_else(|| bad(name, "no dv.crc32"))?.clone();
    let st = SafeTensors::deserialize(bytes).map_err(|e| bad(name, format!("truncated or corrupt ({e})")))?;
    let mut names: Vec<String> = st.names().into_iter().cloned().collect();
    names.sort();
    let mut crc = crc32fast::Hasher::new();
    let mut tensors = HashMap::new();
    for n in names {
        let view = st.tensor(&n).map_err(|e| bad(name, e))?;
        crc.update(view.data());
        let values: Vec<f32> = match view.dtype() {
            Dtype::F32 => view.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
            // half precision only for weights: a checkpoint to resume keeps float32
            Dtype::F16 if n.starts_with("model.") => {
                view.data().chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect()
            }
            d => return Err(bad(name, format!("{n}: dtype {d:?}, expected F32 (or F16 for model.*)"))),
        };
        let shape: Vec<i64> = view.shape().iter().map(|&d| d as i64).collect();
        tensors.insert(n, Tensor::from_slice(&values).f_view(shape.as_slice())?);
    }
    let got = format!("{:08x}", crc.finalize());
    if got != want {
        return Err(bad(name, format!("CRC-32 {got} does not match the stored {want}: the object is corrupt")));
    }
    Ok(CheckpointData { state, tensors })
}

/// A checkpoint file read, verified ([`decode`]) and its run config parsed:
/// what `dv evaluate`, `dv align` and [`crate::export`] start from.
pub struct Opened {
    /// The file as errors name it (its path).
    pub name: String,
    /// Its tensors and state.
    pub data: CheckpointData,
    /// The run config that wrote it (`data.state.config`, parsed).
    pub config: RunConfig,
}

impl Opened {
    /// [`open`] of a checkpoint already read into `bytes`, named `name` in errors.
    pub fn from_bytes(name: String, bytes: &[u8]) -> Result<Opened, TrainError> {
        let data = decode(&name, bytes)?;
        let config = RunConfig::from_toml(&format!("{name} (its run config)"), &data.state.config)?;
        Ok(Opened { name, data, config })
    }

    /// Steps the run had completed when it wrote the checkpoint.
    pub fn step(&self) -> u64 {
        self.data.state.step
    }
}

/// Reads the checkpoint file `path` and verifies it; errors name the file
/// (`reading <path>`, `checkpoint <path>: …`). Returns its name and contents.
pub fn read_file(path: &Path) -> Result<(String, CheckpointData), TrainError> {
    let name = path.display().to_string();
    let bytes = read_bytes(path)?;
    let data = decode(&name, &bytes)?;
    Ok((name, data))
}

/// Reads and verifies the checkpoint file `path` and parses its run config
/// ([`Opened`]); errors name the file (`reading <path>`, `checkpoint
/// <path>: …`, `config <path> (its run config): …`).
pub fn open(path: &Path) -> Result<Opened, TrainError> {
    Opened::from_bytes(path.display().to_string(), &read_bytes(path)?)
}

/// The bytes of the file `path`, or [`TrainError::Read`] naming it.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, TrainError> {
    std::fs::read(path).map_err(|source| TrainError::Read { path: path.display().to_string(), source })
}

/// The object name of the checkpoint after `step` steps.
pub fn step_name(step: u64) -> String {
    format!("step-{step:010}.safetensors")
}

/// Steps of the checkpoints present among `names`, newest first.
pub fn steps_present(names: &[String]) -> Vec<u64> {
    let mut steps: Vec<u64> =
        names.iter().filter_map(|n| n.strip_prefix("step-")?.strip_suffix(".safetensors")?.parse().ok()).collect();
    steps.sort_unstable_by(|a, b| b.cmp(a));
    steps
}

/// Copies a checkpoint's `model.<name>` tensors into `model`'s parameters
/// (every parameter must be there, with its shape); `name` names the
/// checkpoint in errors.
pub fn load_model_weights(name: &str, ck: &CheckpointData, model: &dyn crate::Model) -> Result<(), TrainError> {
    copy_weights(name, model, |n| ck.tensors.get(&format!("model.{n}"))).map(|_| ())
}

/// Copies `lookup(parameter name)` into each of `model`'s parameters: every
/// parameter must be found, with its exact shape (no broadcasting). Returns
/// the number of values copied.
pub fn copy_weights<'t>(
    name: &str,
    model: &dyn crate::Model,
    lookup: impl Fn(&str) -> Option<&'t Tensor>,
) -> Result<usize, TrainError> {
    tch::no_grad(|| -> Result<usize, TrainError> {
        let mut values = 0;
        for (n, mut p) in model.named_parameters() {
            let t = lookup(&n).ok_or_else(|| bad(name, format!("no tensor for parameter {n}: not the same model")))?;
            if t.size() != p.size() {
                return Err(bad(
                    name,
                    format!("{n} is {:?} there, {:?} in this model: not the same size", t.size(), p.size()),
                ));
            }
            p.f_copy_(t).map_err(|e| bad(name, format!("{n}: {e}")))?;
            values += p.numel();
        }
        Ok(values)
    })
}

/// The weights a run starts from (`[init] from`, [`crate::InitConfig`]), by
/// parameter name: a `dv` checkpoint's `model.*` tensors (verified as
/// [`decode`] does; any checkpoint, full or model-only), or every tensor of
/// a plain safetensors file such as a voice package's `model.safetensors`
/// (float32, float16 or bfloat16, read as float32).
pub fn init_weights(name: &str, bytes: &[u8]) -> Result<HashMap<String, Tensor>, TrainError> {
    let (_, meta) =
        SafeTensors::read_metadata(bytes).map_err(|e| bad(name, format!("not a safetensors object ({e})")))?;
    if meta.metadata().as_ref().is_some_and(|m| m.contains_key("dv.state")) {
        let ck = decode(name, bytes)?;
        return Ok(ck
            .tensors
            .into_iter()
            .filter_map(|(n, t)| Some((n.strip_prefix("model.")?.to_string(), t)))
            .collect());
    }
    let st = SafeTensors::deserialize(bytes).map_err(|e| bad(name, format!("truncated or corrupt ({e})")))?;
    let mut out = HashMap::new();
    for (n, view) in st.tensors() {
        let d = view.data();
        let values: Vec<f32> = match view.dtype() {
            Dtype::F32 => d.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
            Dtype::F16 => d.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
            Dtype::BF16 => d.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
            other => return Err(bad(name, format!("{n}: dtype {other:?}, expected F32, F16 or BF16"))),
        };
        let shape: Vec<i64> = view.shape().iter().map(|&s| s as i64).collect();
        out.insert(n, Tensor::from_slice(&values).f_view(shape.as_slice())?);
    }
    Ok(out)
}

/// The element-wise mean of several checkpoints' `model.*` tensors
/// (checkpoint averaging, as ESPnet's `average_checkpoints` and fairseq's
/// `average_checkpoints.py` do), summed in float64. Every checkpoint must
/// come from the same model: the same `[model]` section of its run config
/// and the same tensor names and shapes; the first that differs is named
/// in the error. Returns the state of the checkpoint with the most steps
/// (with no best validation loss when there are several: the mean was
/// never validated) and the
/// averaged tensors, sorted by name; Adam's moments are left out.
pub fn average(
    checkpoints: &[(String, CheckpointData)],
) -> Result<(CheckpointState, Vec<(String, Tensor)>), TrainError> {
    let Some((first_name, first)) = checkpoints.first() else {
        return Err(bad("(none)", "averaging needs at least one checkpoint"));
    };
    let model_section = |name: &str, ck: &CheckpointData| -> Result<toml::Value, TrainError> {
        let v: toml::Value = toml::from_str(&ck.state.config).map_err(|e| bad(name, format!("its run config: {e}")))?;
        v.get("model").cloned().ok_or_else(|| bad(name, "its run config has no [model] section"))
    };
    let model = model_section(first_name, first)?;
    let mut names: Vec<&String> = first.tensors.keys().filter(|n| n.starts_with("model.")).collect();
    names.sort();
    if names.is_empty() {
        return Err(bad(first_name, "no model.* tensors"));
    }
    for (name, ck) in &checkpoints[1..] {
        if model_section(name, ck)? != model {
            return Err(bad(name, format!("its [model] differs from {first_name}'s: not the same model")));
        }
        let mut theirs: Vec<&String> = ck.tensors.keys().filter(|n| n.starts_with("model.")).collect();
        theirs.sort();
        if theirs != names {
            return Err(bad(name, format!("its model tensors differ from {first_name}'s")));
        }
    }
    let k = checkpoints.len() as f64;
    let mut out = Vec::with_capacity(names.len());
    tch::no_grad(|| -> Result<(), TrainError> {
        for n in names {
            let t0 = &first.tensors[n];
            let mut sum = t0.f_to_kind(Kind::Double)?;
            for (name, ck) in &checkpoints[1..] {
                let t = &ck.tensors[n];
                if t.size() != t0.size() {
                    return Err(bad(name, format!("{n} is {:?}, {first_name}'s is {:?}", t.size(), t0.size())));
                }
                sum = sum.f_add(&t.f_to_kind(Kind::Double)?)?;
            }
            out.push((n.clone(), sum.f_div_scalar(k)?.f_to_kind(t0.kind())?));
        }
        Ok(())
    })?;
    let latest = checkpoints.iter().max_by_key(|(_, ck)| ck.state.step).map(|(_, ck)| ck).unwrap_or(first);
    let best = if checkpoints.len() == 1 { latest.state.best } else { None };
    Ok((CheckpointState { best, ..latest.state.clone() }, out))
}
