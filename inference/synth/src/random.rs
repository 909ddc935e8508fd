//! Random voices for benchmarks and conformance tests: a valid package of
//! any WaveNet size with weights drawn from N(0, 1/fan_in) (biases N(0,
//! 0.01), embeddings N(0, 0.49), the output layer N(0, 36/fan_in) so that
//! distributions are peaked as a trained model's are), so activations,
//! gates and output distributions have realistic ranges. Deterministic in
//! the seed ([`Rng`]).

use dv_voice::{
    expected_tensors, ConditioningConfig, DurationConfig, DurationGolden, F0Config, G2pConfig, G2pGolden, G2pWord,
    Golden, Lineage, Tensor, Voice, VoiceConfig, WavenetConfig, Weights,
};

use crate::conditioning::Conditioning;
use crate::duration::DurationModel;
use crate::error::SynthError;
use crate::g2p::G2p;
use crate::kernel::Kernel;
use crate::qrnn::ConditioningNetwork;
use crate::rng::Rng;
use crate::sampler::{Sampler, SamplerOptions};

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

/// A random voice that speaks text plausibly: a duration model of sizes
/// `duration` (`input_dim` 45) whose duration output is biased to 8.5 units
/// (85 ms in 10 ms units, give or take what the random weights add) and F0
/// outputs to 2 units (200 Hz in 100 Hz units), and a G2P model of sizes
/// `g2p` when given (`outputs` 201), its EOS logit raised by 4 so that words
/// end within the step limit as a trained model's do.
pub fn random_text_voice(
    wavenet: WavenetConfig,
    duration: DurationConfig,
    g2p: Option<G2pConfig>,
    seed: u64,
) -> Result<Voice, SynthError> {
    let mut config = random_config(wavenet);
    config.duration = Some(duration);
    config.g2p = g2p;
    config.validate()?;
    let mut w = random_weights(&config, seed);
    if let Some(b) = w.get_mut("duration.out.bias") {
        let bias = b.data_mut(); // [2 + f0_points]
        bias[0] = 8.5;
        bias[2..].iter_mut().for_each(|v| *v = 2.0);
    }
    if let Some(b) = w.get_mut("g2p.out.bias") {
        b.data_mut()[0] += 4.0;
    }
    Ok(Voice::new(config, w)?)
}

/// Random conditioning `[frames, ℓ·2r]`, N(0, 0.5²), as the conditioning
/// network would produce it.
pub fn random_conditioning(config: &VoiceConfig, frames: usize, seed: u64) -> Conditioning {
    let mut rng = Rng::new(seed);
    let width = config.conditioning_width();
    let data = (0..frames * width).map(|_| 0.5 * rng.normal()).collect();
    Conditioning::new(frames, width, data).expect("finite random data of the right size")
}

/// Words whose beam-search pronunciations [`random_golden`] records for a
/// G2P model.
pub const GOLDEN_WORDS: [&str; 4] = ["hello", "world", "o'neill", "x"];

/// Golden outputs (`golden.safetensors`) for `voice` computed by this
/// crate's own networks, as `dv export` computes them with the trainer's:
/// `frames` random feature frames (N(0, 1)), the conditioning network's
/// output for them, random teacher-forced samples over all `frames · hop`
/// steps and the float32 scalar reference's logits; with a duration model,
/// its raw outputs for 8 random `(phoneme, stress)` pairs; with a G2P model,
/// its beam search (at the config's width) of [`GOLDEN_WORDS`].
///
/// A package saved with them passes every parity check by construction, so
/// a test can tamper with one part and see the package refused.
/// Deterministic in the seed. `frames` must be positive.
pub fn random_golden(voice: &Voice, frames: usize, seed: u64) -> Result<Golden, SynthError> {
    let config = voice.config();
    let mut rng = Rng::new(seed);
    let input = config.conditioning.input_dim;
    let features: Vec<f32> = (0..frames * input).map(|_| rng.normal()).collect(); // [F, 227]
    let conditioning = ConditioningNetwork::new(voice)?.forward(&features)?; // [F, ℓ·2r]
    let n = frames * config.hop();
    let samples: Vec<u8> = (0..n).map(|_| (rng.next_u64() % 256) as u8).collect(); // [N]
    let sampler = Sampler::new(voice, Kernel::Scalar, SamplerOptions::default())?;
    let mut logits = vec![0.0f32; n * config.quantization_channels]; // [N, a]
    sampler.logits(&mut sampler.make_scratch(), &conditioning, &samples, &mut logits)?;
    let duration = match config.duration {
        None => None,
        Some(_) => {
            let model = DurationModel::new(voice)?;
            let (np, ns) = (config.phonemes.len() as u64, config.stress_levels as u64);
            let inputs: Vec<(usize, usize)> =
                (0..8).map(|_| ((rng.next_u64() % np) as usize, (rng.next_u64() % ns) as usize)).collect();
            let out = model.forward(&inputs)?; // [P, 2 + f0_points]
            let shape = vec![inputs.len(), model.output_dim()];
            Some(DurationGolden::new(config, &inputs, Tensor::new("golden.duration.output", shape, out)?)?)
        }
    };
    let g2p = match &config.g2p {
        None => None,
        Some(g) => {
            let model = G2p::new(voice)?;
            let words = GOLDEN_WORDS
                .iter()
                .map(|w| {
                    let (pairs, _) = model.beam(w, g.beam)?;
                    let tokens = pairs.iter().map(|&(p, s)| 1 + p * config.stress_levels + s).collect();
                    Ok(G2pWord { letters: model.encode_word(w)?, tokens })
                })
                .collect::<Result<Vec<_>, SynthError>>()?;
            Some(G2pGolden::new(config, &words)?)
        }
    };
    Ok(Golden {
        features: Tensor::new("golden.features", vec![frames, input], features)?,
        conditioning: Tensor::new(
            "golden.conditioning",
            vec![frames, conditioning.width()],
            conditioning.data().to_vec(),
        )?,
        samples,
        logits: Tensor::new("golden.logits", vec![n, config.quantization_channels], logits)?,
        duration,
        g2p,
    })
}
