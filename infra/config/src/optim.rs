//! Adam's constants and the step annealing of the learning rate (Deep Voice §3).

use serde::{Deserialize, Serialize};

/// Adam's constants. The defaults are Deep Voice's (§3: "β1 = 0.9,
/// β2 = 0.999, ε = 1e-8" for every model).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdamConfig {
    /// Learning rate before annealing.
    pub lr: f64,
    #[serde(default = "default_beta1")]
    pub beta1: f64,
    #[serde(default = "default_beta2")]
    pub beta2: f64,
    #[serde(default = "default_eps")]
    pub eps: f64,
    /// Clip the global gradient norm to this value (off when absent).
    #[serde(default)]
    pub clip_norm: Option<f64>,
}

fn default_beta1() -> f64 {
    0.9
}
fn default_beta2() -> f64 {
    0.999
}
fn default_eps() -> f64 {
    1e-8
}

/// The paper's annealing: the learning rate is multiplied by `rate` every
/// `every` iterations (e.g. × 0.95 every 500 for segmentation, §3.2), after
/// an optional linear warm-up over the first `warmup` iterations (0: none).
/// A run that starts from trained weights (`[init]`) wants one: Adam's
/// first updates, with moments at zero, move every weight by about the
/// learning rate whatever its gradient's size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepAnnealing {
    pub rate: f64,
    pub every: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl StepAnnealing {
    /// The learning rate at iteration `step` (0-based).
    pub fn lr(&self, lr0: f64, step: u64) -> f64 {
        let warm = if step < self.warmup { (step + 1) as f64 / self.warmup as f64 } else { 1.0 };
        warm * lr0 * self.rate.powi((step / self.every.max(1)) as i32)
    }
}
