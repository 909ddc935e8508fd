//! Datasets the trainer reads. A [`Dataset`] builds any batch from example
//! indices alone, so the sampler's order fully determines what each step
//! sees.

use dv_torch::tch::{Device, Tensor};

use super::sampler::splitmix64;
use crate::models::model::Batch;
use crate::TrainError;

/// Examples addressed by index.
pub trait Dataset: Send + Sync {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn batch(&self, indices: &[usize], device: Device) -> Result<Batch, TrainError>;
    /// Frames of example `index`, for length bucketing (1 when unknown).
    fn length(&self, index: usize) -> usize {
        let _ = index;
        1
    }
}

// Defined in dv-config with the run config, which parses them without libtorch.
pub use dv_config::SyntheticConfig;

pub struct Synthetic {
    config: SyntheticConfig,
    means: Vec<f32>,
    /// Seconds per frame, for throughput in audio-seconds (10 ms MFCC frames).
    frame_seconds: f64,
}

/// Uniform in [0, 1) from a hash state.
fn unit(state: &mut u64) -> f64 {
    *state = splitmix64(*state);
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

impl Synthetic {
    pub fn new(config: &SyntheticConfig) -> Result<Synthetic, TrainError> {
        config.check()?;
        let c = config.clone();
        let mut state = splitmix64(c.seed ^ 0x6d65616e);
        let means = (0..(c.classes + 1) * c.features).map(|_| (2.0 * unit(&mut state) - 1.0) as f32).collect();
        Ok(Synthetic { config: c, means, frame_seconds: 0.01 })
    }

    /// One example: frames `[t, features]` and labels.
    fn example(&self, index: usize) -> (Vec<f32>, usize, Vec<i64>) {
        let c = &self.config;
        let mut s = splitmix64(c.seed ^ splitmix64(index as u64 + 1));
        let span = |s: &mut u64, (lo, hi): (usize, usize)| lo + (unit(s) * (hi - lo + 1) as f64) as usize;
        let n = span(&mut s, c.labels);
        let labels: Vec<i64> = (0..n).map(|_| 1 + (unit(&mut s) * c.classes as f64) as i64).collect();
        let mut frames = Vec::new();
        let mut t = 0;
        for &label in &labels {
            for _ in 0..span(&mut s, c.frames_per_label) {
                for k in 0..c.features as usize {
                    // Sum of three uniforms: roughly Gaussian noise, sd 0.3.
                    let noise = (unit(&mut s) + unit(&mut s) + unit(&mut s) - 1.5) * 0.6;
                    frames.push(self.means[label as usize * c.features as usize + k] + noise as f32);
                }
                t += 1;
            }
        }
        (frames, t, labels)
    }
}

impl Dataset for Synthetic {
    fn len(&self) -> usize {
        self.config.examples
    }

    fn length(&self, index: usize) -> usize {
        self.example(index).1
    }

    fn batch(&self, indices: &[usize], device: Device) -> Result<Batch, TrainError> {
        let f = self.config.features as usize;
        let examples: Vec<_> = indices.iter().map(|&i| self.example(i)).collect();
        let t_max = examples.iter().map(|e| e.1).max().unwrap_or(0);
        let mut inputs = vec![0.0f32; indices.len() * t_max * f];
        for (b, (frames, t, _)) in examples.iter().enumerate() {
            inputs[b * t_max * f..b * t_max * f + t * f].copy_from_slice(frames);
        }
        let targets: Vec<i64> = examples.iter().flat_map(|e| e.2.iter().copied()).collect();
        let frames: usize = examples.iter().map(|e| e.1).sum();
        Ok(Batch {
            inputs: Tensor::from_slice(&inputs)
                .f_view([indices.len() as i64, t_max as i64, f as i64])?
                .f_to_device(device)?,
            input_lengths: examples.iter().map(|e| e.1 as i64).collect(),
            targets: Tensor::from_slice(&targets).f_to_device(device)?,
            target_lengths: examples.iter().map(|e| e.2.len() as i64).collect(),
            example_ids: indices.to_vec(),
            audio_seconds: Some(frames as f64 * self.frame_seconds),
        })
    }
}
