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
    /// The G2P model's parity data; only in a package with a G2P model (and
    /// optional there).
    pub g2p: Option<G2pGolden>,
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

/// Parity data of the G2P model: K words, their letters and the tokens the
/// trainer's beam search (at the config's width) decoded for them.
#[derive(Debug, Clone, PartialEq)]
pub struct G2pGolden {
    /// `[K, M]` encoder indices (`a` = 1) as float32, each row a word of at
    /// least one letter followed by 0 padding.
    pub letters: Tensor,
    /// `[K, T]` output tokens `1 + phoneme · stress_levels + stress` as
    /// float32, EOS dropped, each row followed by −1 padding.
    pub tokens: Tensor,
}

/// One word of [`G2pGolden`], padding removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct G2pWord {
    /// Encoder indices, 1 … 29 (`a` = 1), at least one.
    pub letters: Vec<usize>,
    /// Output tokens without EOS, 1 … outputs − 1, possibly none.
    pub tokens: Vec<usize>,
}

const NAMES: [&str; 4] = ["golden.features", "golden.conditioning", "golden.samples", "golden.logits"];
/// Tensor names of [`DurationGolden`]: input, output.
const DURATION_NAMES: [&str; 2] = ["golden.duration.input", "golden.duration.output"];
/// Tensor names of [`G2pGolden`]: letters, tokens.
const G2P_NAMES: [&str; 2] = ["golden.g2p.letters", "golden.g2p.tokens"];

impl G2pGolden {
    /// Pads `words`: each word's encoder indices and the tokens the
    /// trainer's beam search decoded for it.
    ///
    /// # Shapes
    /// * `words`: K pairs → `letters` `[K, max letters]`, `tokens`
    ///   `[K, max tokens]`
    pub fn new(config: &VoiceConfig, words: &[G2pWord]) -> Result<Self, VoiceError> {
        let m = words.iter().map(|w| w.letters.len()).max().unwrap_or(0);
        let t = words.iter().map(|w| w.tokens.len()).max().unwrap_or(0);
        let mut letters = vec![0.0f32; words.len() * m]; // [K, M]
        let mut tokens = vec![-1.0f32; words.len() * t]; // [K, T]
        for (i, w) in words.iter().enumerate() {
            for (j, &v) in w.letters.iter().enumerate() {
                letters[i * m + j] = v as f32;
            }
            for (j, &v) in w.tokens.iter().enumerate() {
                tokens[i * t + j] = v as f32;
            }
        }
        let g = Self {
            letters: Tensor::new(G2P_NAMES[0], vec![words.len(), m], letters)?,
            tokens: Tensor::new(G2P_NAMES[1], vec![words.len(), t], tokens)?,
        };
        g.check(config)?;
        Ok(g)
    }

    /// Each word, padding removed; a value that
    /// is not an index of its vocabulary, a row without letters or a value
    /// after padding is [`VoiceError::Golden`].
    pub fn decode(&self, config: &VoiceConfig) -> Result<Vec<G2pWord>, VoiceError> {
        let Some(g) = &config.g2p else {
            return Err(VoiceError::Golden {
                name: G2P_NAMES[0].into(),
                reason: "the package has no G2P model".into(),
            });
        };
        let (ls, ts) = (self.letters.shape(), self.tokens.shape());
        let k = ls.first().copied().unwrap_or(0);
        if ls.len() != 2 {
            return Err(VoiceError::ShapeMismatch {
                name: G2P_NAMES[0].into(),
                expected: vec![k, 0],
                got: ls.to_vec(),
            });
        }
        if ts.len() != 2 || ts[0] != k {
            let t = ts.get(1).copied().unwrap_or(0);
            return Err(VoiceError::ShapeMismatch {
                name: G2P_NAMES[1].into(),
                expected: vec![k, t],
                got: ts.to_vec(),
            });
        }
        let letters = rows(G2P_NAMES[0], &self.letters, 0.0, 1..g.grapheme_rows())?;
        let tokens = rows(G2P_NAMES[1], &self.tokens, -1.0, 1..g.outputs)?;
        if let Some(i) = letters.iter().position(Vec::is_empty) {
            return Err(VoiceError::Golden { name: G2P_NAMES[0].into(), reason: format!("word {i} has no letters") });
        }
        Ok(letters.into_iter().zip(tokens).map(|(letters, tokens)| G2pWord { letters, tokens }).collect())
    }

    /// Checks both shapes and every value against `config`, which must have
    /// a G2P model.
    pub fn check(&self, config: &VoiceConfig) -> Result<(), VoiceError> {
        self.decode(config).map(drop)
    }
}

/// The rows of a `[K, W]` index tensor: values in `range` up to the first
/// `pad`, then only `pad`.
fn rows(name: &str, t: &Tensor, pad: f32, range: std::ops::Range<usize>) -> Result<Vec<Vec<usize>>, VoiceError> {
    let width = t.shape()[1];
    let k = t.shape()[0];
    let mut out = Vec::with_capacity(k);
    for i in 0..k {
        let row = &t.data()[i * width..(i + 1) * width];
        let len = row.iter().position(|&v| v == pad).unwrap_or(width);
        if let Some(j) = row[len..].iter().position(|&v| v != pad) {
            return Err(VoiceError::Golden {
                name: name.into(),
                reason: format!("row {i}: value {} at {} after the padding {pad}", row[len + j], len + j),
            });
        }
        let mut indices = Vec::with_capacity(len);
        for (j, &v) in row[..len].iter().enumerate() {
            if !(v.fract() == 0.0 && v >= range.start as f32 && v < range.end as f32) {
                return Err(VoiceError::Golden {
                    name: name.into(),
                    reason: format!("row {i}: value {v} at {j} is not an index {}..{}", range.start, range.end),
                });
            }
            indices.push(v as usize);
        }
        out.push(indices);
    }
    Ok(out)
}

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
        if let Some(g) = &self.g2p {
            g.check(config)?;
        }
        Ok(())
    }

    /// Reads and checks a golden file.
    pub fn read(path: &Path, config: &VoiceConfig) -> Result<Self, VoiceError> {
        let mut t = read_safetensors(path)?;
        for (name, tensor) in &t {
            let known = [&NAMES[..], &DURATION_NAMES, &G2P_NAMES].iter().any(|n| n.contains(&name.as_str()));
            if !known {
                return Err(VoiceError::UnexpectedTensor { name: name.clone(), shape: tensor.shape().to_vec() });
            }
        }
        // Both duration tensors or neither.
        let has_duration = DURATION_NAMES.iter().any(|n| t.contains_key(*n));
        let has_g2p = G2P_NAMES.iter().any(|n| t.contains_key(*n));
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
        let g2p =
            if has_g2p { Some(G2pGolden { letters: take(G2P_NAMES[0])?, tokens: take(G2P_NAMES[1])? }) } else { None };
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
        let g = Self { features, conditioning, samples: codes, logits, duration, g2p };
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
        if let Some(g) = &self.g2p {
            tensors.push((G2P_NAMES[0], &g.letters));
            tensors.push((G2P_NAMES[1], &g.tokens));
        }
        write_atomic(&path, &serialize_safetensors(&path, tensors.into_iter())?)?;
        crate::checksum::write(dir)
    }
}
