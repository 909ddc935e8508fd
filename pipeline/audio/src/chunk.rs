//! Training chunks for WaveNet (Deep Voice §4.4: "we split utterances into
//! one-second chunks with a quarter second of context for each chunk,
//! padding each utterance with a quarter second of silence at the
//! beginning").
//!
//! # The rule
//!
//! The utterance is padded with `lead` seconds (0.25) of silence at its
//! start. Chunk `k` covers the target span `[k·len, (k+1)·len)` of the
//! original audio (`len` = 1 s) and its window starts `context` seconds
//! (0.25) earlier, so the window is 1.25 s and the first chunk's context is
//! the padding. The last chunk may be short; its window is zero-padded to
//! full length and [`Chunk::target_samples`] says how much is real.
//!
//! A chunk is dropped as predominantly silence when more than
//! `max_silent_fraction` (80%) of its 10 ms target frames have an RMS more
//! than `silence_db` (40 dB) below the utterance's loudest 10 ms frame.

use crate::AudioError;

/// Chunking parameters (Deep Voice §4.4 for the lengths).
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkConfig {
    /// Hz of the audio being cut.
    pub sample_rate: u32,
    /// Silence added before the utterance, seconds: 0.25.
    pub lead: f64,
    /// Target span of a chunk, seconds: 1.
    pub len: f64,
    /// Context before the target, seconds: 0.25.
    pub context: f64,
    /// A 10 ms frame is silent this many dB below the loudest frame: 40.
    pub silence_db: f64,
    /// A chunk with more silent target frames than this fraction is dropped: 0.8.
    pub max_silent_fraction: f64,
}

impl ChunkConfig {
    pub fn for_rate(sample_rate: u32) -> ChunkConfig {
        ChunkConfig { sample_rate, lead: 0.25, len: 1.0, context: 0.25, silence_db: 40.0, max_silent_fraction: 0.8 }
    }
}

/// One training chunk of an utterance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// Index of the chunk in the utterance, counting dropped ones.
    pub index: usize,
    /// Start of the window in the original audio, samples; negative inside
    /// the leading silence.
    pub window_start: i64,
    /// Window length: context plus target, samples.
    pub window_samples: usize,
    /// Context before the target, samples.
    pub context_samples: usize,
    /// Real (not zero-padded) samples of the target.
    pub target_samples: usize,
}

impl Chunk {
    /// Copies the window into `out` (`window_samples` long), zeros where it
    /// lies outside the audio.
    pub fn window_into(&self, audio: &[f32], out: &mut [f32]) {
        for (i, o) in out.iter_mut().enumerate().take(self.window_samples) {
            let j = self.window_start + i as i64;
            *o = if j >= 0 && (j as usize) < audio.len() { audio[j as usize] } else { 0.0 };
        }
    }
}

/// What [`chunks`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunks {
    pub kept: Vec<Chunk>,
    /// Chunks dropped as predominantly silence.
    pub dropped: usize,
}

/// Cuts an utterance into chunks by the rule above.
pub fn chunks(audio: &[f32], cfg: &ChunkConfig) -> Result<Chunks, AudioError> {
    let rate = cfg.sample_rate as f64;
    let len = (cfg.len * rate).round() as usize;
    let context = (cfg.context * rate).round() as usize;
    let lead = (cfg.lead * rate).round() as usize;
    if len == 0 || context > lead + len || !(0.0..=1.0).contains(&cfg.max_silent_fraction) {
        return Err(AudioError::Config { what: "chunk configuration", reason: format!("{cfg:?}") });
    }
    let frame = ((rate / 100.0).round() as usize).max(1);
    let rms: Vec<f64> = audio
        .chunks(frame)
        .map(|f| (f.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / f.len() as f64).sqrt())
        .collect();
    let peak = rms.iter().copied().fold(0.0, f64::max);
    let floor = peak * 10f64.powf(-cfg.silence_db / 20.0);
    let n = audio.len().div_ceil(len);
    let mut out = Chunks { kept: Vec::new(), dropped: 0 };
    for k in 0..n {
        let start = k * len;
        let target = len.min(audio.len() - start);
        let frames = &rms[start / frame..(start + target).div_ceil(frame).min(rms.len())];
        let silent = frames.iter().filter(|r| peak == 0.0 || **r < floor).count();
        if silent as f64 > cfg.max_silent_fraction * frames.len() as f64 {
            out.dropped += 1;
            continue;
        }
        out.kept.push(Chunk {
            index: k,
            window_start: start as i64 - context as i64,
            window_samples: context + len,
            context_samples: context,
            target_samples: target,
        });
    }
    Ok(out)
}
