//! The voice package (format version 1): the weight format that the trainers
//! write (`dv export`) and the inference side reads. Nothing here links
//! libtorch; a served voice is a small static binary plus this directory.
//!
//! ```text
//! voice/
//!   config.json          VoiceConfig: sizes, rates, phonemes, F0 range, lineage,
//!                        and the optional duration and G2P models' sizes and units
//!   model.safetensors    every weight, float32, little-endian, row-major
//!   golden.safetensors   optional parity data (Golden)
//! ```
//!
//! The specification is `inference/voice/FORMAT.md`; this crate implements it
//! and is the single source of truth for the tensor list
//! ([`expected_tensors`]), which the trainer's exporter checks itself
//! against.
//!
//! # Contract
//!
//! * [`Voice::read`] accepts a package only if: `format` is
//!   `"deepvoice-rs voice"` and `version` is 1 ([`VoiceError::Version`]);
//!   `config.json` has no key outside the format ([`VoiceError::UnknownKey`]
//!   names it, as `section.key`); `sample_rate` is a positive multiple of
//!   `frame_rate`; `quantization_channels` is 256; r and s are positive
//!   multiples of 8 (the SIMD lane width); every tensor of
//!   [`expected_tensors`] is present ([`VoiceError::MissingTensor`]) with
//!   exactly its shape ([`VoiceError::ShapeMismatch`], naming the tensor,
//!   the expected and the actual shape), is float32 or float16 ([`VoiceError::Dtype`];
//!   half precision is read back as float32, and written for a tensor only when
//!   every value is a binary16 value, so storage never changes a weight)
//!   and finite; and no other tensor is present
//!   ([`VoiceError::UnexpectedTensor`]).
//! * When the package has a `SHA256SUMS` ([`CHECKSUM_FILE`]), every file
//!   it lists must have its digest ([`VoiceError::Checksum`] names the
//!   file); the writers below refresh it after each file.
//! * [`Voice::write`] runs the same checks before writing anything, so an
//!   invalid package is never written, and writes each file to a temporary
//!   name in the same directory, syncs it and renames it over the final name:
//!   a crash leaves either the old file or the new one.
//! * The `duration` section (the duration and F0 model, §3.3) is optional:
//!   a package without it holds a WaveNet only. With it, its
//!   `input_dim` is `phonemes.len() + stress_levels` and its `duration.*`
//!   tensors join [`expected_tensors`]; `golden.safetensors` may then hold
//!   [`DurationGolden`] (and must not otherwise).
//! * The `g2p` section (the grapheme-to-phoneme model, §3.1) is optional
//!   too, and independent of `duration`. Its vocabularies are fixed: the
//!   letters [`G2P_GRAPHEMES`] at indices 1 … 29 (0 pads) and the outputs
//!   EOS = 0 and `1 + phoneme · stress_levels + stress` (201 with 40
//!   phonemes and 5 stress levels). With it, its `g2p.*` tensors join
//!   [`expected_tensors`] and `golden.safetensors` may hold [`G2pGolden`].
//! * Matrices are `[out, in]` as `torch.nn.Linear` stores them: `y = W x + b`.
//! * Weights are owned `Vec<f32>` ([`Tensor`]); readers lay them out for
//!   their kernels themselves.
#![forbid(unsafe_code)]

pub mod catalog;
mod checksum;
mod config;
mod error;
mod golden;
mod layout;
mod package;
mod tensor;

pub use checksum::CHECKSUM_FILE;
pub use config::{
    ConditioningConfig, DurationConfig, F0Config, G2pConfig, Lineage, VoiceConfig, WavenetConfig, FORMAT_NAME,
    FORMAT_VERSION, G2P_EOS, G2P_GRAPHEMES, MAX_BEAM, MAX_CHANNELS, MAX_DILATION_CYCLE, PRESETS,
};
pub use error::VoiceError;
pub use golden::{DurationGolden, G2pGolden, G2pWord, Golden};
pub use layout::{expected_tensors, g2p_tensors};
pub use package::{read_config, Voice, Weights, CONFIG_FILE, GOLDEN_FILE, MODEL_FILE};
pub use tensor::Tensor;
