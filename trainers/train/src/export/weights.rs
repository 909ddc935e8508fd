//! Weights out of libtorch: a checkpoint's model alone (`dv export
//! --model-only`), optionally the mean of several and in half precision;
//! rounding a model to half precision in place; a tensor as the voice
//! package's.

use std::fmt;
use std::path::{Path, PathBuf};

use dv_torch::tch;
use sha2::Digest;

use crate::checkpoint::{average, encode, encode_half, read_file};
use crate::TrainError;

/// What [`model_only`] wrote.
#[derive(Debug, Clone)]
pub struct ModelOnly {
    pub out: PathBuf,
    /// The model tensors written.
    pub tensors: usize,
    /// Each checkpoint read, by name, and its step, in the order given.
    pub checkpoints: Vec<(String, u64)>,
    /// The step the written state records (the newest checkpoint's).
    pub step: u64,
    /// Whether the tensors are stored in half precision.
    pub half: bool,
    /// The size of the file written.
    pub bytes: usize,
}

impl fmt::Display for ModelOnly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.checkpoints.as_slice() {
            [(name, _)] => format!("{name} (step {})", self.step),
            cks => {
                let steps: Vec<String> = cks.iter().map(|(_, s)| s.to_string()).collect();
                format!("the mean of {} checkpoints (steps {})", cks.len(), steps.join(", "))
            }
        };
        write!(
            f,
            "wrote {}: {} model tensors of {what}{}, {:.1} MB",
            self.out.display(),
            self.tensors,
            if self.half { " in half precision" } else { "" },
            self.bytes as f64 / 1e6
        )
    }
}

/// Writes the model weights of `checkpoints` (any model kind; no optimizer
/// state), averaged element-wise when there are several
/// ([`crate::checkpoint::average`]: checkpoint averaging, as ESPnet and
/// fairseq do), to `out` as a checkpoint small enough to ship, still
/// readable by export, `dv evaluate` and `[init] from`. `half`: stored in
/// IEEE binary16, read back as float32.
pub fn model_only(checkpoints: &[PathBuf], half: bool, out: &Path) -> Result<ModelOnly, TrainError> {
    let mut cks = Vec::with_capacity(checkpoints.len());
    for path in checkpoints {
        cks.push(read_file(path)?);
    }
    let read_steps = cks.iter().map(|(name, ck)| (name.clone(), ck.state.step)).collect();
    let (state, tensors) = average(&cks)?;
    let bytes = if half { encode_half(&state, &tensors)? } else { encode(&state, &tensors)? };
    dv_util::write_atomic(out, &bytes)?;
    Ok(ModelOnly {
        out: out.to_path_buf(),
        tensors: tensors.len(),
        checkpoints: read_steps,
        step: state.step,
        half,
        bytes: bytes.len(),
    })
}

/// Rounds every parameter to the nearest binary16 value in place, so that
/// a package stores exactly the weights its goldens were made with.
pub(super) fn round_to_half(params: Vec<(String, tch::Tensor)>) -> Result<(), TrainError> {
    tch::no_grad(|| {
        for (name, mut t) in params {
            let rounded = t.f_to_kind(tch::Kind::Half)?.f_to_kind(t.kind())?;
            if !bool::try_from(rounded.f_isfinite()?.f_all()?)? {
                let reason = "a weight is beyond the half-precision range; export without --half".into();
                return Err(TrainError::Export { name, reason });
            }
            t.f_copy_(&rounded)?;
        }
        Ok(())
    })
}

/// `t` as the voice package's float32 tensor `name`.
pub(super) fn to_voice_tensor(name: &str, t: &tch::Tensor) -> Result<dv_voice::Tensor, TrainError> {
    let shape: Vec<usize> = t.size().iter().map(|&d| d as usize).collect();
    let data = Vec::<f32>::try_from(t.f_to_kind(tch::Kind::Float)?.f_contiguous()?.f_view([-1])?)?;
    Ok(dv_voice::Tensor::new(name, shape, data)?)
}

/// Every named parameter as the voice package's tensor of that name.
pub(super) fn voice_weights(params: Vec<(String, tch::Tensor)>) -> Result<dv_voice::Weights, TrainError> {
    let mut weights = dv_voice::Weights::new();
    for (name, t) in params {
        let tensor = to_voice_tensor(&name, &t)?;
        weights.insert(name, tensor);
    }
    Ok(weights)
}

/// SHA-256 of `bytes`, lower-case hex.
pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
