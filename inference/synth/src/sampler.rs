//! The autoregressive sampler: conditioning in, mu-law codes out.

use dv_voice::Voice;

use crate::conditioning::Conditioning;
use crate::engine::{Engine, EngineState, Precision};
use crate::error::SynthError;
use crate::kernel::Kernel;
use crate::nonlinear::Nonlinearity;
use crate::reference::{RefState, Reference};
use crate::rng::Rng;
use crate::sampling::{Sampling, ALPHABET};
use crate::simd::{pipeline::Pipeline, Avx2};
use crate::wavenet::WavenetWeights;

/// The mu-law code of silence: y(t) for t < 0 (FORMAT.md).
pub const SILENCE: u8 = 128;

/// How the sampler computes (all default to the paper's exact float32
/// single-thread model).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SamplerOptions {
    /// float32 or int16 weights (§5.1). int16 needs [`Kernel::Avx2Fma`].
    pub precision: Precision,
    /// Exact or App. C nonlinearities.
    pub nonlinearity: Nonlinearity,
    /// 1, or 2 for the main + auxiliary pipeline of §5.1 / Figure 2
    /// (needs [`Kernel::Avx2Fma`]).
    pub threads: usize,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        Self { precision: Precision::F32, nonlinearity: Nonlinearity::Exact, threads: 1 }
    }
}

enum Imp {
    Scalar(Reference),
    Avx2(Engine),
}

/// A WaveNet ready to sample. Immutable; all per-utterance state lives in a
/// [`Scratch`], so one sampler serves many utterances (one per scratch).
pub struct Sampler {
    imp: Imp,
    kernel: Kernel,
    options: SamplerOptions,
    hop: usize,
    width: usize,
    a: usize,
    layers: usize,
}

enum State {
    Scalar(RefState),
    Avx2(Box<EngineState>),
}

/// Per-utterance state: layer histories, the last two samples, and every
/// buffer a step needs. Made by [`Sampler::make_scratch`].
pub struct Scratch {
    state: State,
    /// Samples generated or teacher-forced so far (t of the next step).
    t: usize,
    y1: u8,
    y2: u8,
    logits: Vec<f32>,
    p: Box<[f32; ALPHABET]>,
    work: Box<[f32; ALPHABET]>,
    owner: (usize, usize, Kernel),
}

impl Scratch {
    /// The index of the next sample.
    pub fn position(&self) -> usize {
        self.t
    }
}

impl Sampler {
    /// Prepares `voice` for `kernel` (packing weights for SIMD kernels).
    pub fn new(voice: &Voice, kernel: Kernel, options: SamplerOptions) -> Result<Self, SynthError> {
        let w = WavenetWeights::new(voice)?;
        let cfg = voice.config();
        if options.threads == 0 || options.threads > 2 {
            return Err(SynthError::InvalidOption {
                what: "threads",
                reason: format!("{} is not 1 or 2", options.threads),
            });
        }
        let imp = match kernel {
            Kernel::Scalar => {
                if options.precision != Precision::F32 || options.threads != 1 {
                    return Err(SynthError::Unsupported {
                        what: "the scalar reference runs float32 on one thread (int16 and threads need avx2-fma)"
                            .into(),
                    });
                }
                Imp::Scalar(Reference { w, nl: options.nonlinearity })
            }
            Kernel::Avx2Fma => {
                let avx = Avx2::detect().ok_or_else(|| SynthError::Unsupported {
                    what: "the avx2-fma kernel on a CPU without AVX2 and FMA".into(),
                })?;
                Imp::Avx2(Engine::new(avx, &w, options.nonlinearity, options.precision, options.threads == 2))
            }
        };
        Ok(Self {
            imp,
            kernel,
            options,
            hop: cfg.hop(),
            width: cfg.conditioning_width(),
            a: cfg.quantization_channels,
            layers: cfg.wavenet.layers,
        })
    }

    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    pub fn options(&self) -> SamplerOptions {
        self.options
    }

    /// Audio samples per conditioning frame.
    pub fn hop(&self) -> usize {
        self.hop
    }

    /// Bytes of weights the step reads (packed form for SIMD kernels).
    pub fn weight_bytes(&self) -> usize {
        match &self.imp {
            Imp::Scalar(r) => {
                let w = &r.w;
                4 * (w
                    .layers
                    .iter()
                    .map(|l| l.w_prev.len() * 2 + l.res.as_ref().map_or(0, |m| m.0.len()))
                    .sum::<usize>()
                    + w.skip_w.len()
                    + w.relu_w.len()
                    + w.out_w.len())
            }
            Imp::Avx2(e) => e.weight_bytes(),
        }
    }

    /// A fresh state at t = 0 (the only allocation of a synthesis).
    pub fn make_scratch(&self) -> Scratch {
        let state = match &self.imp {
            Imp::Scalar(r) => State::Scalar(r.make_state()),
            Imp::Avx2(e) => State::Avx2(Box::new(e.make_state())),
        };
        Scratch {
            state,
            t: 0,
            y1: SILENCE,
            y2: SILENCE,
            logits: vec![0.0; self.a],
            p: Box::new([0.0; ALPHABET]),
            work: Box::new([0.0; ALPHABET]),
            owner: (self.width, self.layers, self.kernel),
        }
    }

    /// Rewinds `scratch` to t = 0: silent past, zero layer histories.
    pub fn reset(&self, scratch: &mut Scratch) {
        scratch.t = 0;
        scratch.y1 = SILENCE;
        scratch.y2 = SILENCE;
        match (&self.imp, &mut scratch.state) {
            (Imp::Scalar(r), State::Scalar(s)) => r.reset(s),
            (Imp::Avx2(e), State::Avx2(s)) => e.reset(s),
            _ => {}
        }
    }

    fn check(&self, scratch: &Scratch, cond: &Conditioning, n: usize) -> Result<(), SynthError> {
        if scratch.owner != (self.width, self.layers, self.kernel) {
            return Err(SynthError::Mismatch {
                what: "scratch",
                reason: "made by a sampler of another voice or kernel".into(),
            });
        }
        if cond.width() != self.width {
            return Err(SynthError::Shape {
                what: "conditioning width (ℓ·2r)",
                expected: self.width,
                got: cond.width(),
            });
        }
        let covered = cond.frames() * self.hop;
        if scratch.t + n > covered {
            return Err(SynthError::TooLong { n_samples: scratch.t + n, frames: cond.frames(), covered });
        }
        Ok(())
    }

    /// Generates `out.len()` samples continuing from `scratch` (from t = 0
    /// for a fresh or reset scratch), so successive calls stream one
    /// utterance block by block. Allocates nothing on one thread.
    ///
    /// # Shapes
    /// * `cond`: `[F, ℓ·2r]`, with `F · hop ≥ position + out.len()`
    /// * `out`: `[N]` mu-law codes, samples `position .. position + N`
    pub fn generate(
        &self,
        scratch: &mut Scratch,
        cond: &Conditioning,
        sampling: Sampling,
        rng: &mut Rng,
        out: &mut [u8],
    ) -> Result<(), SynthError> {
        self.generate_inspect(scratch, cond, sampling, rng, out, |_, _, _| {})
    }

    /// [`Sampler::generate`], calling `inspect(t, logits, p)` at every step
    /// before its sample is drawn (for parity tests and diagnostics). With
    /// two threads `inspect` runs on the main thread.
    pub fn generate_inspect<F: FnMut(usize, &[f32], &[f32; ALPHABET])>(
        &self,
        scratch: &mut Scratch,
        cond: &Conditioning,
        sampling: Sampling,
        rng: &mut Rng,
        out: &mut [u8],
        mut inspect: F,
    ) -> Result<(), SynthError> {
        let sampling = sampling.validate()?;
        self.check(scratch, cond, out.len())?;
        let Scratch { state, t, y1, y2, logits, p, work, .. } = scratch;
        match (&self.imp, state) {
            (Imp::Scalar(r), State::Scalar(st)) => {
                for o in out.iter_mut() {
                    let frame = *t / self.hop;
                    r.step(st, *y1, *y2, cond.frame(frame), logits);
                    r.nl.softmax(logits, &mut p[..]);
                    inspect(*t, logits, p);
                    *o = sampling.for_frame(cond.voiced(frame)).sample(p, rng, work);
                    (*y2, *y1) = (*y1, *o);
                    *t += 1;
                }
            }
            (Imp::Avx2(e), State::Avx2(st)) if self.options.threads == 2 => {
                let hop = self.hop;
                let mut pipe = Pipeline { engine: e, state: st, hop };
                pipe.run(cond, t, y1, y2, out, &mut |tt, logits: &[f32], out_sample: &mut u8| {
                    e.avx.softmax(logits, &mut p[..], e.nl);
                    inspect(tt, logits, p);
                    *out_sample = sampling.for_frame(cond.voiced(tt / hop)).sample(p, rng, work);
                });
            }
            (Imp::Avx2(e), State::Avx2(st)) => {
                for o in out.iter_mut() {
                    let frame = *t / self.hop;
                    if st.frame != Some(frame) {
                        e.load_frame(st, cond.frame(frame));
                        st.frame = Some(frame);
                    }
                    e.step(st, *y1, *y2, logits);
                    e.avx.softmax(logits, &mut p[..], e.nl);
                    inspect(*t, logits, p);
                    *o = sampling.for_frame(cond.voiced(frame)).sample(p, rng, work);
                    (*y2, *y1) = (*y1, *o);
                    *t += 1;
                }
            }
            _ => return Err(SynthError::Mismatch { what: "scratch", reason: "made for another kernel".into() }),
        }
        Ok(())
    }

    /// Teacher-forced logits: resets `scratch`, then for t = 0 … N−1 the
    /// logits of y(t) given y(t−1), y(t−2) from `samples` (128 before 0),
    /// as `golden.logits` holds them. Runs on one thread, in the same order
    /// of operations as [`Sampler::generate`] with these options, so the
    /// logits are bit-identical to the sampler's when fed its samples.
    ///
    /// # Shapes
    /// `samples`: `[N]`; `out`: `[N, a]`
    pub fn logits(
        &self,
        scratch: &mut Scratch,
        cond: &Conditioning,
        samples: &[u8],
        out: &mut [f32],
    ) -> Result<(), SynthError> {
        if out.len() != samples.len() * self.a {
            return Err(SynthError::Shape {
                what: "logits output [N, a]",
                expected: samples.len() * self.a,
                got: out.len(),
            });
        }
        self.reset(scratch);
        self.check(scratch, cond, samples.len())?;
        let Scratch { state, t, y1, y2, .. } = scratch;
        for (row, &y) in out.chunks_exact_mut(self.a).zip(samples) {
            self.forced_step(state, t, (y1, y2), cond, y, row)?;
        }
        Ok(())
    }

    /// One teacher-forced step on one thread: the logits of y(t) into
    /// `row`, then `y` becomes y(t) and t advances.
    fn forced_step(
        &self,
        state: &mut State,
        t: &mut usize,
        (y1, y2): (&mut u8, &mut u8),
        cond: &Conditioning,
        y: u8,
        row: &mut [f32],
    ) -> Result<(), SynthError> {
        let frame = *t / self.hop;
        match (&self.imp, state) {
            (Imp::Scalar(r), State::Scalar(st)) => r.step(st, *y1, *y2, cond.frame(frame), row),
            (Imp::Avx2(e), State::Avx2(st)) => {
                if st.frame != Some(frame) {
                    e.load_frame(st, cond.frame(frame));
                    st.frame = Some(frame);
                }
                e.step(st, *y1, *y2, row);
            }
            _ => return Err(SynthError::Mismatch { what: "scratch", reason: "made for another kernel".into() }),
        }
        (*y2, *y1) = (*y1, y);
        *t += 1;
        Ok(())
    }

    /// Feeds known samples instead of drawing them: continuing from
    /// `scratch` (as [`Sampler::generate`] does), steps the network on
    /// `codes` as if they had been sampled, so the samples that follow are
    /// conditioned on them (teacher forcing, as [`Sampler::logits`] does
    /// from t = 0). One thread whatever the options; allocates nothing.
    ///
    /// # Shapes
    /// * `cond`: `[F, ℓ·2r]`, with `F · hop ≥ position + codes.len()`
    /// * `codes`: `[N]` mu-law codes, samples `position .. position + N`
    pub fn force(&self, scratch: &mut Scratch, cond: &Conditioning, codes: &[u8]) -> Result<(), SynthError> {
        self.check(scratch, cond, codes.len())?;
        let Scratch { state, t, y1, y2, logits, .. } = scratch;
        for &c in codes {
            self.forced_step(state, t, (y1, y2), cond, c, logits)?;
        }
        Ok(())
    }

    /// Streams `n_samples` samples of `cond` block by block (see [`Stream`]).
    pub fn stream<'a>(&'a self, cond: &'a Conditioning, n_samples: usize, sampling: Sampling, rng: Rng) -> Stream<'a> {
        Stream { sampler: self, cond, scratch: self.make_scratch(), sampling, rng, remaining: n_samples }
    }

    /// Allocating convenience: the whole utterance (`F · hop` samples) with
    /// `Rng::new(seed)`.
    pub fn synthesize(&self, cond: &Conditioning, sampling: Sampling, seed: u64) -> Result<Vec<u8>, SynthError> {
        let mut out = vec![0u8; cond.frames() * self.hop];
        let mut scratch = self.make_scratch();
        self.generate(&mut scratch, cond, sampling, &mut Rng::new(seed), &mut out)?;
        Ok(out)
    }
}

/// Block-by-block generation of one utterance (for `dv synth` to stream
/// audio): each [`Stream::next_block`] continues where the last stopped,
/// and the concatenated blocks equal one [`Sampler::generate`] call with the
/// same seed.
pub struct Stream<'a> {
    sampler: &'a Sampler,
    cond: &'a Conditioning,
    scratch: Scratch,
    sampling: Sampling,
    rng: Rng,
    remaining: usize,
}

impl Stream<'_> {
    /// Fills up to `out.len()` samples; returns how many (0 when done).
    pub fn next_block(&mut self, out: &mut [u8]) -> Result<usize, SynthError> {
        let n = out.len().min(self.remaining);
        self.sampler.generate(&mut self.scratch, self.cond, self.sampling, &mut self.rng, &mut out[..n])?;
        self.remaining -= n;
        Ok(n)
    }

    /// Feeds `codes` as the next samples instead of drawing them
    /// ([`Sampler::force`]); at most [`Stream::remaining`] of them.
    pub fn force(&mut self, codes: &[u8]) -> Result<usize, SynthError> {
        let n = codes.len().min(self.remaining);
        self.sampler.force(&mut self.scratch, self.cond, &codes[..n])?;
        self.remaining -= n;
        Ok(n)
    }

    /// Samples still to come.
    pub fn remaining(&self) -> usize {
        self.remaining
    }
}
