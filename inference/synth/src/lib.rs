//! WaveNet synthesis on CPU without libtorch (Deep Voice §5, §5.1, App. A):
//! the grapheme-to-phoneme model, the duration and F0 model, the
//! conditioning network, a scalar reference sampler, and AVX2/FMA kernels
//! chosen at run time.
//!
//! # Pipeline and units
//!
//! 0. [`G2p::beam`] (when the package has one, §3.1): a word missing from
//!    the lexicon (letters `a-z ' - .`, any case) → `(phoneme, stress)`
//!    index pairs by beam search at the config's width (FORMAT.md gives
//!    the exact rule the trainer shares; width 1 is [`G2p::greedy`]).
//!    f64 inside; it runs once per unknown word.
//! 1. [`DurationModel::predict`] (when the package has one, §3.3, App. B):
//!    phonemes `(dv_text::Phoneme::index, dv_text::Stress::index)` →
//!    [`Prosody`] per phoneme: duration in seconds, voicing probability,
//!    F0 in Hz at `f0_points` evenly spaced points. With
//!    `DurationConfig::stress == false` feed stress 0 (`Stress::None`).
//!    f64 inside; it runs once per utterance.
//! 2. [`ConditioningNetwork::forward`]: `[F, 227]` frames at 256 Hz
//!    (`dv_text::conditioning`) → [`Conditioning`] `[F, ℓ·2r]`, the
//!    per-layer biases L_i (App. A.2).
//! 3. [`Sampler`]: autoregressive generation at 16384 Hz; sample n uses
//!    conditioning row `n / hop` (hop = 64, upsampling by repetition). The
//!    output is 8-bit mu-law codes (`dv_audio::mulaw::decode` gives
//!    amplitudes in [−1, 1]). Before the audio starts, y = 128 and every
//!    layer input is 0, as the trainer's zero left padding (FORMAT.md).
//! 4. [`Sampling`]: direct (default), temperature, mean, mode or top-k
//!    (App. A.4), with the seeded [`Rng`] (xoshiro256++), so a seed
//!    reproduces the audio exactly for a given kernel and options.
//!
//! # Kernels
//!
//! [`Kernel::Scalar`] is the oracle: FORMAT.md's equations written out in
//! f32, with each layer's past inputs kept in a ring ("fast WaveNet": nothing
//! recomputed). [`Kernel::Avx2Fma`] runs the same model over weights packed
//! at load time for 8-lane FMA loops, with W_prev/W_cur and W_res/W_skip
//! fused, optional App. C nonlinearities ([`Nonlinearity::Approximate`]),
//! optional int16 weights ([`Precision::Int16`]) and an optional second
//! thread (the main/auxiliary split of §5.1, Figure 2). It is checked
//! against the scalar kernel on every Table 2 size (tests/it): per-step
//! distributions agree within 1e-4 and mode-sampled streams are identical.
//! Different kernels sum in different orders, so with direct sampling a
//! seed reproduces audio per kernel, not across kernels.
//!
//! # Allocation
//!
//! A [`Scratch`] ([`Sampler::make_scratch`]) holds every per-utterance
//! buffer; [`Sampler::generate`] and [`Sampler::logits`] allocate nothing
//! per step (the two-thread path allocates two small buffers per call, not
//! per step). [`Sampler::synthesize`] and [`ConditioningNetwork::forward`]
//! allocate and say so.
//!
//! # Safety
//!
//! `unsafe` lives only in `simd/`: the `#[target_feature]` kernels, reached
//! through a token that only CPU detection creates, and the two-thread
//! pipeline's hand-over buffers.

mod beam;
mod conditioning;
mod duration;
mod engine;
mod error;
mod g2p;
mod gru;
mod kernel;
pub mod nonlinear;
mod packed;
mod qrnn;
pub mod quant;
pub mod random;
mod reference;
mod rng;
mod sampler;
mod sampling;
mod simd;
mod wavenet;

pub use conditioning::Conditioning;
pub use duration::{DurationModel, Prosody};
pub use engine::Precision;
pub use error::SynthError;
pub use g2p::G2p;
pub use kernel::Kernel;
pub use nonlinear::Nonlinearity;
pub use qrnn::ConditioningNetwork;
pub use rng::Rng;
pub use sampler::{Sampler, SamplerOptions, Scratch, Stream, SILENCE};
pub use sampling::{direct, mode, Sampling, ALPHABET};
pub use wavenet::{LayerWeights, WavenetWeights};

/// Test-only access to individual kernels (not a stable API).
#[doc(hidden)]
pub mod kernels {
    use crate::packed::{PackedI16, PackedPanels};
    use crate::simd::Avx2;

    /// `c += a · wᵀ` for row-major `w` (`[rows, cols]`) and `a` (`[M, cols]`)
    /// through the all-frames product: the AVX2 kernel when `avx2` (`None`
    /// without AVX2), the scalar loop otherwise.
    pub fn matmul_acc(avx2: bool, w: &[f32], rows: usize, cols: usize, a: &[f32], c: &mut [f32]) -> Option<()> {
        let p = PackedPanels::new(w, rows, cols);
        if avx2 {
            Avx2::detect()?.matmul_acc(&p, a, c);
        } else {
            p.matmul_acc_scalar(a, c);
        }
        Some(())
    }

    /// What [`avx2_matvec_i16`] quantized, for the scalar oracle.
    pub struct Quantized {
        pub wq: Vec<i16>,
        pub scale: Vec<f32>,
        pub xq: Vec<i16>,
        pub sx: f32,
    }

    /// The AVX2 int16 product `y += scale · sx · Wq xq` for row-major `w`
    /// (quantized here), or `None` without AVX2.
    pub fn avx2_matvec_i16(w: &[f32], rows: usize, cols: usize, x: &[f32], y: &mut [f32]) -> Option<Quantized> {
        let avx = Avx2::detect()?;
        let p = PackedI16::new(w, rows, cols);
        let (wq, scale) = crate::quant::quantize_rows(w, rows, cols, p.limits.weight_max);
        let mut xq = vec![0i16; cols];
        let sx = avx.quantize(x, p.limits.input_max, &mut xq);
        avx.matvec_i16(&p, &xq, sx, y);
        Some(Quantized { wq, scale, xq, sx })
    }
}
