//! Random voices for benchmarks and conformance tests: a valid package of
//! any WaveNet size with weights drawn from N(0, 1/fan_in) (biases N(0,
//! 0.01), embeddings N(0, 0.49), the output layer N(0, 36/fan_in) so that
//! distributions are peaked as a trained model's are), so activations,
//! gates and output distributions have realistic ranges. Deterministic in
//! the seed ([`Rng`]).

use dv_voice::{
    expected_tensors, ConditioningConfig, DurationConfig, F0Config, G2pConfig, Lineage, Tensor, Voice, VoiceConfig,
    WavenetConfig, Weights,
};

use crate::conditioning::Conditioning;
use crate::error::SynthError;
use crate::rng::Rng;

/// Conditioning network sizes of random voices: 227 inputs, 2 layers, H = 32.
pub const RANDOM_CONDITIONING: ConditioningConfig =
    ConditioningConfig { input_dim: 227, qrnn_layers: 2, hidden: 32, stress: true };

/// The config of a random voice of size `wavenet`.
pub fn random_config(wavenet: WavenetConfig) -> VoiceConfig {
    VoiceConfig::new(
        wavenet,
        RANDOM_CONDITIONING,
        (0..40).map(|i| format!("P{i}")).collect(),
        5,
        F0Config { min_hz: 75.0, max_hz: 500.0 },
        Lineage {
            corpus_manifest_sha256: String::new(),
            featurizer: Default::default(),
            checkpoint: "random".into(),
            step: 0,
            code_version: env!("CARGO_PKG_VERSION").into(),
            created: "1970-01-01T00:00:00Z".into(),
        },
    )
}

/// Random weights for `config` (every tensor of `expected_tensors`).
pub fn random_weights(config: &VoiceConfig, seed: u64) -> Weights {
    let mut rng = Rng::new(seed);
    let mut w = Weights::new();
    for (name, shape) in expected_tensors(config) {
        let n: usize = shape.iter().product();
        let std = if shape.len() == 2 {
            // Embeddings (and the duration model's one-hot input layer) are
            // looked up, not summed: unit scale / 2 (two add up).
            if name.contains("embed") || name == "duration.fc1.weight" {
                0.7
            } else if name == "wavenet.out.weight" || name == "g2p.out.weight" {
                // A trained model's output is peaked, not near uniform: logits
                // spread over several units (max p of a few percent to most).
                6.0 / (shape[1] as f32).sqrt()
            } else {
                1.0 / (shape[1] as f32).sqrt()
            }
        } else {
            0.1
        };
        let data: Vec<f32> = (0..n).map(|_| rng.normal() * std).collect();
        w.insert(name.clone(), Tensor::new(&name, shape, data).expect("shape and data agree"));
    }
    w
}

/// A random voice of size `wavenet`.
pub fn random_voice(wavenet: WavenetConfig, seed: u64) -> Result<Voice, SynthError> {
    let config = random_config(wavenet);
    let weights = random_weights(&config, seed);
    Ok(Voice::new(config, weights)?)
}

/// A random voice of size `wavenet` with a duration model of sizes
/// `duration` (its `input_dim` must be 45: 40 phonemes and 5 stress levels).
pub fn random_voice_with_duration(
    wavenet: WavenetConfig,
    duration: DurationConfig,
    seed: u64,
) -> Result<Voice, SynthError> {
    let mut config = random_config(wavenet);
    config.duration = Some(duration);
    let weights = random_weights(&config, seed);
    Ok(Voice::new(config, weights)?)
}

/// A random voice of size `wavenet` with a G2P model of sizes `g2p` (its
/// `outputs` must be 201: 40 phonemes and 5 stress levels).
pub fn random_voice_with_g2p(wavenet: WavenetConfig, g2p: G2pConfig, seed: u64) -> Result<Voice, SynthError> {
    let mut config = random_config(wavenet);
    config.g2p = Some(g2p);
    let weights = random_weights(&config, seed);
    Ok(Voice::new(config, weights)?)
}

/// Random conditioning `[frames, ℓ·2r]`, N(0, 0.5²), as the conditioning
/// network would produce it.
pub fn random_conditioning(config: &VoiceConfig, frames: usize, seed: u64) -> Conditioning {
    let mut rng = Rng::new(seed);
    let width = config.conditioning_width();
    let data = (0..frames * width).map(|_| 0.5 * rng.normal()).collect();
    Conditioning::new(frames, width, data).expect("finite random data of the right size")
}
