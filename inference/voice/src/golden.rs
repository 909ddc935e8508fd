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
    /// The duration model's parity data; only in a package with a duration
    /// model (and optional there).
    pub duration: Option<DurationGolden>,
}

/// Parity data of the duration model: P phonemes.
#[derive(Debug, Clone, PartialEq)]
pub struct DurationGolden {
    /// `[P, input_dim]` one-hot rows: phoneme `p` at column `p`, stress `s`
    /// at column `phonemes.len() + s`, zeros elsewhere.
    pub input: Tensor,
    /// `[P, 2 + f0_points]` the trainer's raw outputs `o` for `input`.
    pub output: Tensor,
}

const NAMES: [&str; 4] = ["golden.features", "golden.conditioning", "golden.samples", "golden.logits"];
/// Tensor names of [`DurationGolden`]: input, output.
const DURATION_NAMES: [&str; 2] = ["golden.duration.input", "golden.duration.output"];

impl DurationGolden {
    /// The one-hot input rows for `(phoneme, stress)` pairs, as the duration
    /// model reads them, and the trainer's `output` for them.
    ///
    /// # Shapes
    /// * `inputs`: P pairs, `phoneme < phonemes.len()`, `stress < stress_levels`
    /// * `output`: `[P, 2 + f0_points]`
    pub fn new(config: &VoiceConfig, inputs: &[(usize, usize)], output: Tensor) -> Result<Self, VoiceError> {
        let g = Self { input: Self::encode(config, inputs)?, output };
        g.check(config)?;
        Ok(g)
    }

    /// One-hot rows `[P, phonemes.len() + stress_levels]` for `(phoneme,
    /// stress)` pairs; an index out of range is [`VoiceError::Golden`].
    pub fn encode(config: &VoiceConfig, inputs: &[(usize, usize)]) -> Result<Tensor, VoiceError> {
        let (np, ns) = (config.phonemes.len(), config.stress_levels);
        let width = np + ns;
        let mut data = vec![0.0f32; inputs.len() * width]; // [P, np + ns]
        for (i, &(p, s)) in inputs.iter().enumerate() {
            if p >= np || s >= ns {
                return Err(VoiceError::Golden {
                    name: DURATION_NAMES[0].into(),
                    reason: format!("row {i}: phoneme {p} (of {np}) or stress {s} (of {ns}) out of range"),
                });
            }
            data[i * width + p] = 1.0;
            data[i * width + np + s] = 1.0;
        }
        Tensor::new(DURATION_NAMES[0], vec![inputs.len(), width], data)
    }

    /// The `(phoneme, stress)` pair of each input row; a row that is not
    /// exactly one phoneme one and one stress one (zeros elsewhere) is
    /// [`VoiceError::Golden`].
    pub fn decode(&self, config: &VoiceConfig) -> Result<Vec<(usize, usize)>, VoiceError> {
        let np = config.phonemes.len();
        let width = np + config.stress_levels;
        let shape = self.input.shape();
        if shape.len() != 2 || shape[1] != width {
            let p = shape.first().copied().unwrap_or(0);
            return Err(VoiceError::ShapeMismatch {
                name: DURATION_NAMES[0].into(),
                expected: vec![p, width],
                got: shape.to_vec(),
            });
        }
        let mut pairs = Vec::with_capacity(shape[0]);
        for (i, row) in self.input.data().chunks_exact(width).enumerate() {
            let ones = |r: &[f32]| -> Option<usize> {
                let mut hot = None;
                for (j, &v) in r.iter().enumerate() {
                    if v == 1.0 && hot.is_none() {
                        hot = Some(j);
                    } else if v != 0.0 {
                        return None;
                    }
                }
                hot
            };
            match (ones(&row[..np]), ones(&row[np..])) {
                (Some(p), Some(s)) => pairs.push((p, s)),
                _ => {
                    return Err(VoiceError::Golden {
                        name: DURATION_NAMES[0].into(),
                        reason: format!("row {i} is not one phoneme one-hot followed by one stress one-hot"),
                    })
                }
            }
        }
        Ok(pairs)
    }

    /// Checks both shapes and the one-hot rows against `config`, which must
    /// have a duration model.
    pub fn check(&self, config: &VoiceConfig) -> Result<(), VoiceError> {
        let Some(d) = &config.duration else {
            return Err(VoiceError::Golden {
                name: DURATION_NAMES[0].into(),
                reason: "the package has no duration model".into(),
            });
        };
        let p = self.decode(config)?.len();
        let expected = vec![p, d.output_dim()];
        if self.output.shape() != expected.as_slice() {
            return Err(VoiceError::ShapeMismatch {
                name: DURATION_NAMES[1].into(),
                expected,
                got: self.output.shape().to_vec(),
            });
        }
        Ok(())
    }
}

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
        if let Some(d) = &self.duration {
            d.check(config)?;
        }
        Ok(())
    }

    /// Reads and checks a golden file.
    pub fn read(path: &Path, config: &VoiceConfig) -> Result<Self, VoiceError> {
        let mut t = read_safetensors(path)?;
        for (name, tensor) in &t {
            if !NAMES.contains(&name.as_str()) && !DURATION_NAMES.contains(&name.as_str()) {
                return Err(VoiceError::UnexpectedTensor { name: name.clone(), shape: tensor.shape().to_vec() });
            }
        }
        // Both duration tensors or neither.
        let has_duration = DURATION_NAMES.iter().any(|n| t.contains_key(*n));
        let mut take = |name: &str| {
            t.remove(name).ok_or_else(|| VoiceError::MissingTensor { name: name.to_string(), expected: vec![] })
        };
        let (features, conditioning, samples, logits) =
            (take(NAMES[0])?, take(NAMES[1])?, take(NAMES[2])?, take(NAMES[3])?);
        let duration = if has_duration {
            Some(DurationGolden { input: take(DURATION_NAMES[0])?, output: take(DURATION_NAMES[1])? })
        } else {
            None
        };
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
        let g = Self { features, conditioning, samples: codes, logits, duration };
        g.check(config)?;
        Ok(g)
    }

    /// Checks, then writes `golden.safetensors` into `dir` (temp file + rename).
    pub fn write(&self, dir: &Path, config: &VoiceConfig) -> Result<(), VoiceError> {
        self.check(config)?;
        let samples =
            Tensor::new(NAMES[2], vec![self.samples.len()], self.samples.iter().map(|&c| c as f32).collect())?;
        let path = dir.join(GOLDEN_FILE);
        let mut tensors = vec![
            (NAMES[0], &self.features),
            (NAMES[1], &self.conditioning),
            (NAMES[2], &samples),
            (NAMES[3], &self.logits),
        ];
        if let Some(d) = &self.duration {
            tensors.push((DURATION_NAMES[0], &d.input));
            tensors.push((DURATION_NAMES[1], &d.output));
        }
        write_atomic(&path, &serialize_safetensors(&path, tensors.into_iter())?)
    }
}
