//! `golden.safetensors`: fixed inputs and the trainer's outputs for them, so
//! the inference side can prove parity (FORMAT.md, "golden.safetensors").

use std::path::Path;

use crate::config::VoiceConfig;
use crate::error::VoiceError;
use crate::package::{read_safetensors, serialize_safetensors, write_atomic, GOLDEN_FILE};
use crate::tensor::Tensor;

/// Parity data. F frames, N samples, with `N ≤ F · hop`.
#[derive(Debug, Clone, PartialEq)]
pub struct Golden {
    /// `[F, input_dim]` conditioning frames.
    pub features: Tensor,
    /// `[F, ℓ·2r]` conditioning network output L, before upsampling.
    pub conditioning: Tensor,
    /// `[N]` teacher-forced mu-law codes (stored as float32 in the file).
    pub samples: Vec<u8>,
    /// `[N, a]` logits at t = 0 … N−1 given `samples` before t (128 before 0).
    pub logits: Tensor,
}

const NAMES: [&str; 4] = ["golden.features", "golden.conditioning", "golden.samples", "golden.logits"];

impl Golden {
    /// Checks every shape against `config`.
    pub fn check(&self, config: &VoiceConfig) -> Result<(), VoiceError> {
        let f = self.features.shape().first().copied().unwrap_or(0);
        let n = self.samples.len();
        let a = config.quantization_channels;
        let expect = [
            (NAMES[0], &self.features, vec![f, config.conditioning.input_dim]),
            (NAMES[1], &self.conditioning, vec![f, config.conditioning_width()]),
            (NAMES[3], &self.logits, vec![n, a]),
        ];
        for (name, t, shape) in expect {
            if t.shape() != shape.as_slice() {
                return Err(VoiceError::ShapeMismatch { name: name.into(), expected: shape, got: t.shape().to_vec() });
            }
        }
        if n > f * config.hop() {
            return Err(VoiceError::Golden {
                name: NAMES[2].into(),
                reason: format!("{n} samples but {f} frames cover only {}", f * config.hop()),
            });
        }
        Ok(())
    }

    /// Reads and checks a golden file.
    pub fn read(path: &Path, config: &VoiceConfig) -> Result<Self, VoiceError> {
        let mut t = read_safetensors(path)?;
        for (name, tensor) in &t {
            if !NAMES.contains(&name.as_str()) {
                return Err(VoiceError::UnexpectedTensor { name: name.clone(), shape: tensor.shape().to_vec() });
            }
        }
        let mut take = |name: &str| {
            t.remove(name).ok_or_else(|| VoiceError::MissingTensor { name: name.to_string(), expected: vec![] })
        };
        let (features, conditioning, samples, logits) =
            (take(NAMES[0])?, take(NAMES[1])?, take(NAMES[2])?, take(NAMES[3])?);
        if samples.shape().len() != 1 {
            return Err(VoiceError::ShapeMismatch {
                name: NAMES[2].into(),
                expected: vec![samples.data().len()],
                got: samples.shape().to_vec(),
            });
        }
        let mut codes = Vec::with_capacity(samples.data().len());
        for (i, &v) in samples.data().iter().enumerate() {
            if !(0.0..=255.0).contains(&v) || v.fract() != 0.0 {
                return Err(VoiceError::Golden {
                    name: NAMES[2].into(),
                    reason: format!("value {v} at {i} is not a code 0..=255"),
                });
            }
            codes.push(v as u8);
        }
        let g = Self { features, conditioning, samples: codes, logits };
        g.check(config)?;
        Ok(g)
    }

    /// Checks, then writes `golden.safetensors` into `dir` (temp file + rename).
    pub fn write(&self, dir: &Path, config: &VoiceConfig) -> Result<(), VoiceError> {
        self.check(config)?;
        let samples =
            Tensor::new(NAMES[2], vec![self.samples.len()], self.samples.iter().map(|&c| c as f32).collect())?;
        let path = dir.join(GOLDEN_FILE);
        let tensors = [
            (NAMES[0], &self.features),
            (NAMES[1], &self.conditioning),
            (NAMES[2], &samples),
            (NAMES[3], &self.logits),
        ];
        write_atomic(&path, &serialize_safetensors(&path, tensors.into_iter())?)
    }
}
