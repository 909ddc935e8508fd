//! [`Speaker::render`]: one sentence's conditioning frames → the
//! conditioning network → the WaveNet sampler → 16-bit PCM, handed over in
//! blocks, with cancellation between blocks.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use dv_gpu::GpuSampling;
use dv_synth::Rng;

use crate::backend::Backend;
use crate::error::SpeakError;
use crate::options::{sentence_seed, Ramp, RenderOptions};
use crate::sentence::{Sentence, PAUSE};
use crate::speaker::Speaker;

/// A flag a caller sets to stop a render (a client that went away). Clones
/// share the flag.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every render watching this token to stop at its next block.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// What one [`Speaker::render`] did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RenderStats {
    /// Samples handed to the sink.
    pub samples: usize,
    /// Seconds in the conditioning network.
    pub conditioning_s: f64,
    /// Seconds in the sampler (for the GPU, the launch; excluding the sink).
    pub sampling_s: f64,
    /// The sink returned [`ControlFlow::Break`] before the end.
    pub stopped: bool,
}

/// The mu-law code of silence (the sampler's input before the audio starts).
pub const SILENCE: u8 = 128;

/// How much of a sentence's leading pause is sampled (module docs of
/// [`Speaker::render`]): the rest is fed as silence.
pub const LEAD_SAMPLED_S: f64 = 0.03;

/// A mu-law code as a 16-bit PCM sample: what every render hands over
/// (the slot scheduler of `dv-slots` too).
pub fn pcm(code: u8) -> i16 {
    (dv_audio::mulaw::decode(code) * 32767.0).round().clamp(-32768.0, 32767.0) as i16
}

/// The leading samples of a sentence of `samples` samples at `sample_rate`
/// that are fed to the sampler as silence rather than sampled: its leading
/// pause ([`PAUSE`]) but for the last [`LEAD_SAMPLED_S`], at most
/// `samples`; 0 when it starts with no pause. [`Speaker::render`] applies
/// it on the CPU (its docs say why), and so does `dv-slots` on a backend
/// that can feed one slot alone.
pub fn lead_samples(sentence: &Sentence, sample_rate: u32, samples: usize) -> usize {
    match sentence.phonemes.first() {
        Some(p) if p.phoneme == PAUSE => {
            (((p.end_s - LEAD_SAMPLED_S).max(0.0) * sample_rate as f64) as usize).min(samples)
        }
        _ => 0,
    }
}

impl Speaker {
    /// One sentence → 16-bit PCM at [`Speaker::sample_rate`], handed to
    /// `sink` in blocks of at most `render.block` samples, in order: all
    /// [`Sentence::samples`] of it, or `render.max_samples` if fewer.
    ///
    /// `cancel` is checked before each block: once set, the render returns
    /// [`SpeakError::Cancelled`]. A sink returning [`ControlFlow::Break`]
    /// ends it early too, with `stopped` set in the stats. The CPU sampler
    /// stops between blocks; the GPU kernel renders the sentence in one
    /// launch (cancellation is seen before it and between the blocks it
    /// hands over).
    ///
    /// The sentence's leading pause is not sampled but fed to the sampler as
    /// silence (code [`SILENCE`]), on the CPU and on the GPU, all but its last
    /// [`LEAD_SAMPLED_S`]: the network, sampling from a silent start, drifts
    /// to a constant offset (a mu-law code far from 128, about −0.35 full
    /// scale, held ~150 ms in 22 of 30 held-out sentences of the shipped
    /// voice, then a click where speech begins); fed true silence, its first
    /// samples see what its training chunks saw before an utterance (zero
    /// padding, then the recording's quiet start). Sampled instead (as the GPU
    /// kernels did until 2026-11-29), a voice retrained on an hour of a new
    /// speaker opened every sentence with a burst of noise (RMS 0.45 of full
    /// scale over the first 200 ms).
    ///
    /// The sentence samples with the seed [`crate::sentence_seed`]`(render.seed,
    /// sentence.index())`: a seed reproduces the audio exactly for a given
    /// device, kernel and options (the GPU's direct sampling draws by the
    /// Gumbel-max rule: the CPU's distribution, not its samples).
    pub fn render(
        &self,
        sentence: &Sentence,
        render: &RenderOptions,
        cancel: &CancelToken,
        sink: &mut dyn FnMut(&[i16]) -> ControlFlow<()>,
    ) -> Result<RenderStats, SpeakError> {
        if render.block == 0 {
            return Err(SpeakError::BadOption {
                what: "block",
                reason: "0 samples: a block holds at least one".into(),
            });
        }
        let sampling = render.sampling.validate()?;
        let mut stats = RenderStats::default();
        if cancel.is_cancelled() {
            return Err(SpeakError::Cancelled);
        }
        let t = Instant::now();
        let cond = self.network.forward(&sentence.frames)?;
        let cond = cond.with_voiced(sentence.voiced())?;
        stats.conditioning_s = t.elapsed().as_secs_f64();
        let n = (cond.frames() * self.hop()).min(render.max_samples.unwrap_or(usize::MAX));
        if n == 0 {
            return Ok(stats);
        }
        let seed = sentence_seed(render.seed, sentence.index);
        let block = render.block.min(n);
        let mut out = vec![0i16; block];
        let mut deliver = |codes: &[u8], stats: &mut RenderStats| -> Result<bool, SpeakError> {
            for chunk in codes.chunks(block) {
                if cancel.is_cancelled() {
                    return Err(SpeakError::Cancelled);
                }
                let pcm_block = &mut out[..chunk.len()];
                for (o, &c) in pcm_block.iter_mut().zip(chunk) {
                    *o = pcm(c);
                }
                stats.samples += chunk.len();
                if sink(pcm_block).is_break() {
                    stats.stopped = stats.samples < n;
                    return Ok(false);
                }
            }
            Ok(true)
        };
        match &self.backend {
            Backend::Cpu(sampler) => {
                let mut stream = sampler.stream(&cond, n, sampling, Rng::new(seed));
                let mut codes = vec![0u8; block];
                // The first hand-over is short (a stream's first audio), the next ones grow as the
                // audio already handed over allows (Ramp), up to whole blocks.
                let ramp = (render.first_block > 0)
                    .then_some(Ramp { first: render.first_block, sample_rate: self.sample_rate() });
                let (rate, started) = (f64::from(self.sample_rate()), Instant::now());
                let mut first_out: Option<f64> = None;
                let mut step = |stats: &RenderStats| -> usize {
                    let Some(ramp) = ramp else { return block };
                    let now = started.elapsed().as_secs_f64();
                    if stats.samples > 0 && first_out.is_none() {
                        first_out = Some(now);
                    }
                    let ahead = first_out.map(|t1| stats.samples as f64 / rate - (now - t1));
                    let per_sample = (stats.samples > 0).then(|| stats.sampling_s / stats.samples as f64);
                    ramp.steps(ahead, per_sample, block)
                };
                let lead = lead_samples(sentence, self.sample_rate(), n);
                let mut fed = 0;
                while fed < lead {
                    if cancel.is_cancelled() {
                        return Err(SpeakError::Cancelled);
                    }
                    let k = step(&stats).min(lead - fed);
                    codes[..k].fill(SILENCE);
                    let t = Instant::now();
                    stream.force(&codes[..k])?;
                    stats.sampling_s += t.elapsed().as_secs_f64();
                    fed += k;
                    if !deliver(&codes[..k], &mut stats)? {
                        return Ok(stats);
                    }
                }
                loop {
                    if cancel.is_cancelled() {
                        return Err(SpeakError::Cancelled);
                    }
                    let k = step(&stats);
                    let t = Instant::now();
                    let got = stream.next_block(&mut codes[..k])?;
                    stats.sampling_s += t.elapsed().as_secs_f64();
                    if got == 0 || !deliver(&codes[..got], &mut stats)? {
                        break;
                    }
                }
            }
            Backend::Cuda(gpu, _) => {
                let gs = GpuSampling::new(sampling)?;
                let t = Instant::now();
                let run = {
                    // A poisoned lock only means another render panicked: the
                    // stream keeps weights and compiled code, and every launch
                    // allocates its own state.
                    let gpu = gpu.lock().unwrap_or_else(|e| e.into_inner());
                    gpu.run_with_lead(&cond, n, gs, seed, lead_samples(sentence, self.sample_rate(), n))?
                };
                stats.sampling_s = t.elapsed().as_secs_f64();
                deliver(&run.samples, &mut stats)?;
            }
        }
        Ok(stats)
    }
}
