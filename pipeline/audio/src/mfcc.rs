//! MFCCs, the segmentation model's input (Deep Voice §3.2: "20 Mel-frequency
//! cepstral coefficients (MFCCs) sampled with a 10 millisecond stride").
//!
//! The computation is `librosa.feature.mfcc` (librosa 0.11) with the
//! parameters of [`MfccConfig`], step by step:
//!
//! 1. STFT: the signal is zero-padded by `n_fft / 2` on each side
//!    (`center=True, pad_mode="constant"`); frame `t` starts at `t * hop`;
//!    a periodic Hann window of `win_length` samples is centred in `n_fft`;
//!    `1 + len / hop` frames.
//! 2. Power spectrum `|X|^2`, `n_fft / 2 + 1` bins.
//! 3. Mel filterbank: Slaney's mel scale (`htk=False`), `n_mels` triangles
//!    between `fmin` and `fmax`, each scaled to unit area (`norm="slaney"`).
//! 4. `power_to_db`: `10 log10(max(S, 1e-10))`, then everything below the
//!    utterance's maximum minus `top_db` is raised to it (so the result
//!    depends on the whole utterance, as librosa's does).
//! 5. DCT-II with orthonormal scaling over the mel axis; the first `n_mfcc`.
//!
//! Output is frame-major: `[frames, n_mfcc]`.

use std::f64::consts::PI;
use std::sync::Arc;

use realfft::{RealFftPlanner, RealToComplex};

use crate::AudioError;

/// MFCC parameters, named as librosa names them.
#[derive(Debug, Clone, PartialEq)]
pub struct MfccConfig {
    /// Hz. The model rate, 16384 (Deep Voice App. A.3).
    pub sample_rate: u32,
    /// 20 coefficients (Deep Voice §3.2).
    pub n_mfcc: usize,
    /// Samples between frames: 10 ms (§3.2), `round(sample_rate / 100)`; 164 at 16384 Hz.
    pub hop_length: usize,
    /// Analysis window: 25 ms, `round(sample_rate / 40)`; 410 at 16384 Hz.
    pub win_length: usize,
    /// FFT size, the next power of two at or above the window: 512.
    pub n_fft: usize,
    /// Mel bands: 40.
    pub n_mels: usize,
    /// Lowest mel edge, Hz: 0.
    pub fmin: f64,
    /// Highest mel edge, Hz: the Nyquist frequency.
    pub fmax: f64,
    /// Dynamic range kept below the utterance's peak, dB: 80 (librosa's default).
    pub top_db: Option<f64>,
}

impl MfccConfig {
    /// The parameters above for a sample rate.
    pub fn for_rate(sample_rate: u32) -> MfccConfig {
        let win_length = (sample_rate as f64 / 40.0).round() as usize;
        MfccConfig {
            sample_rate,
            n_mfcc: 20,
            hop_length: (sample_rate as f64 / 100.0).round() as usize,
            win_length,
            n_fft: win_length.next_power_of_two(),
            n_mels: 40,
            fmin: 0.0,
            fmax: sample_rate as f64 / 2.0,
            top_db: Some(80.0),
        }
    }
}

impl Default for MfccConfig {
    fn default() -> Self {
        Self::for_rate(16_384)
    }
}

/// A planned MFCC transform: window, mel filterbank, DCT and FFT plan.
pub struct Mfcc {
    config: MfccConfig,
    window: Vec<f32>,
    /// `[n_mels][first bin, weights]`: each filter's non-zero span.
    filters: Vec<(usize, Vec<f32>)>,
    /// `[n_mfcc][n_mels]` orthonormal DCT-II rows.
    dct: Vec<f32>,
    fft: Arc<dyn RealToComplex<f32>>,
}

/// Buffers [`Mfcc::compute_into`] works in; reuse it across utterances.
pub struct MfccScratch {
    frame: Vec<f32>,
    spectrum: Vec<realfft::num_complex::Complex<f32>>,
    fft_scratch: Vec<realfft::num_complex::Complex<f32>>,
    power: Vec<f32>,
    /// The log-mel spectrogram of the utterance, grown to the longest seen.
    log_mel: Vec<f32>,
}

fn hz_to_mel(f: f64) -> f64 {
    let (f_sp, min_log_hz) = (200.0 / 3.0, 1000.0);
    let min_log_mel = min_log_hz / f_sp;
    let logstep = 6.4f64.ln() / 27.0;
    if f >= min_log_hz {
        min_log_mel + (f / min_log_hz).ln() / logstep
    } else {
        f / f_sp
    }
}

fn mel_to_hz(m: f64) -> f64 {
    let (f_sp, min_log_hz) = (200.0 / 3.0, 1000.0);
    let min_log_mel = min_log_hz / f_sp;
    let logstep = 6.4f64.ln() / 27.0;
    if m >= min_log_mel {
        min_log_hz * (logstep * (m - min_log_mel)).exp()
    } else {
        f_sp * m
    }
}

impl Mfcc {
    /// Plans the transform; an impossible configuration is an error.
    pub fn new(config: &MfccConfig) -> Result<Mfcc, AudioError> {
        let c = config.clone();
        let bad = |reason: String| AudioError::Config { what: "MFCC configuration", reason };
        if c.win_length == 0 || c.win_length > c.n_fft || c.hop_length == 0 || c.n_mels == 0 {
            return Err(bad(format!(
                "win {} / n_fft {} / hop {} / n_mels {}",
                c.win_length, c.n_fft, c.hop_length, c.n_mels
            )));
        }
        if c.n_mfcc == 0 || c.n_mfcc > c.n_mels {
            return Err(bad(format!("n_mfcc {} must lie in 1..={}", c.n_mfcc, c.n_mels)));
        }
        if !(0.0 <= c.fmin && c.fmin < c.fmax && c.fmax <= c.sample_rate as f64 / 2.0 + 1e-9) {
            return Err(bad(format!("mel range {}–{} Hz at {} Hz", c.fmin, c.fmax, c.sample_rate)));
        }
        // Periodic Hann of win_length, centred in n_fft (librosa pad_center).
        let mut window = vec![0.0f32; c.n_fft];
        let left = (c.n_fft - c.win_length) / 2;
        for i in 0..c.win_length {
            window[left + i] = (0.5 - 0.5 * (2.0 * PI * i as f64 / c.win_length as f64).cos()) as f32;
        }
        let bins = c.n_fft / 2 + 1;
        let fft_freqs: Vec<f64> = (0..bins).map(|k| k as f64 * c.sample_rate as f64 / c.n_fft as f64).collect();
        let (mlo, mhi) = (hz_to_mel(c.fmin), hz_to_mel(c.fmax));
        let mel_f: Vec<f64> =
            (0..c.n_mels + 2).map(|i| mel_to_hz(mlo + (mhi - mlo) * i as f64 / (c.n_mels + 1) as f64)).collect();
        let mut filters = Vec::with_capacity(c.n_mels);
        for m in 0..c.n_mels {
            let (lo, mid, hi) = (mel_f[m], mel_f[m + 1], mel_f[m + 2]);
            let enorm = 2.0 / (hi - lo);
            let w: Vec<f64> = fft_freqs
                .iter()
                .map(|&f| {
                    let lower = (f - lo) / (mid - lo);
                    let upper = (hi - f) / (hi - mid);
                    lower.min(upper).max(0.0) * enorm
                })
                .collect();
            let first = w.iter().position(|&v| v > 0.0).unwrap_or(0);
            let last = w.iter().rposition(|&v| v > 0.0).map_or(first, |l| l + 1);
            filters.push((first, w[first..last].iter().map(|&v| v as f32).collect()));
        }
        let n = c.n_mels as f64;
        let mut dct = Vec::with_capacity(c.n_mfcc * c.n_mels);
        for k in 0..c.n_mfcc {
            let scale = if k == 0 { (1.0 / n).sqrt() } else { (2.0 / n).sqrt() };
            for i in 0..c.n_mels {
                dct.push((scale * (PI * k as f64 * (2.0 * i as f64 + 1.0) / (2.0 * n)).cos()) as f32);
            }
        }
        let fft = RealFftPlanner::<f32>::new().plan_fft_forward(c.n_fft);
        Ok(Mfcc { config: c, window, filters, dct, fft })
    }

    pub fn config(&self) -> &MfccConfig {
        &self.config
    }

    /// Frames for a signal of `len` samples: `1 + len / hop`.
    pub fn frames(&self, len: usize) -> usize {
        1 + len / self.config.hop_length
    }

    /// Buffers for [`compute_into`](Self::compute_into).
    pub fn make_scratch(&self) -> MfccScratch {
        MfccScratch {
            frame: self.fft.make_input_vec(),
            spectrum: self.fft.make_output_vec(),
            fft_scratch: self.fft.make_scratch_vec(),
            power: vec![0.0; self.config.n_fft / 2 + 1],
            log_mel: Vec::new(),
        }
    }

    /// MFCCs of `audio` into `out`, frame-major `[frames(len), n_mfcc]`.
    /// Allocates only when `scratch` meets a longer utterance than before.
    ///
    /// # Shapes
    /// `audio: [len]` → `out: [1 + len / hop, n_mfcc]`.
    pub fn compute_into(&self, audio: &[f32], out: &mut [f32], scratch: &mut MfccScratch) -> Result<(), AudioError> {
        let c = &self.config;
        let frames = self.frames(audio.len());
        if out.len() != frames * c.n_mfcc {
            return Err(AudioError::Config {
                what: "MFCC output buffer",
                reason: format!("{} values for {frames} frames of {}", out.len(), c.n_mfcc),
            });
        }
        let pad = (c.n_fft / 2) as isize;
        scratch.log_mel.resize(frames * c.n_mels, 0.0);
        let mut peak = f32::NEG_INFINITY;
        for t in 0..frames {
            let start = (t * c.hop_length) as isize - pad;
            for (i, x) in scratch.frame.iter_mut().enumerate() {
                let j = start + i as isize;
                let v = if j >= 0 && (j as usize) < audio.len() { audio[j as usize] } else { 0.0 };
                *x = v * self.window[i];
            }
            self.fft
                .process_with_scratch(&mut scratch.frame, &mut scratch.spectrum, &mut scratch.fft_scratch)
                .map_err(|e| AudioError::Config { what: "FFT", reason: e.to_string() })?;
            for (p, z) in scratch.power.iter_mut().zip(&scratch.spectrum) {
                *p = z.norm_sqr();
            }
            let row = &mut scratch.log_mel[t * c.n_mels..(t + 1) * c.n_mels];
            for (m, (first, w)) in self.filters.iter().enumerate() {
                let e: f64 = w.iter().zip(&scratch.power[*first..]).map(|(a, b)| *a as f64 * *b as f64).sum();
                let db = (10.0 * e.max(1e-10).log10()) as f32;
                row[m] = db;
                peak = peak.max(db);
            }
        }
        if let Some(top) = c.top_db {
            let floor = peak - top as f32;
            for v in scratch.log_mel[..frames * c.n_mels].iter_mut() {
                *v = v.max(floor);
            }
        }
        for t in 0..frames {
            let row = &scratch.log_mel[t * c.n_mels..(t + 1) * c.n_mels];
            for k in 0..c.n_mfcc {
                let basis = &self.dct[k * c.n_mels..(k + 1) * c.n_mels];
                out[t * c.n_mfcc + k] = basis.iter().zip(row).map(|(a, b)| a * b).sum();
            }
        }
        Ok(())
    }

    /// The log-mel spectrogram (dB, floored at its peak − `top_db`) that the
    /// last [`compute_into`](Self::compute_into) on `scratch` computed, for
    /// its `frames` frames: what the MFCCs are the DCT of, and what a
    /// spectrogram picture shows.
    ///
    /// # Shapes
    /// `[frames, n_mels]`, frame-major (shorter if `frames` exceeds what was computed).
    pub fn last_log_mel<'a>(&self, scratch: &'a MfccScratch, frames: usize) -> &'a [f32] {
        &scratch.log_mel[..(frames * self.config.n_mels).min(scratch.log_mel.len())]
    }

    /// Allocating convenience over [`compute_into`](Self::compute_into).
    pub fn compute(&self, audio: &[f32]) -> Result<Vec<f32>, AudioError> {
        let mut out = vec![0.0; self.frames(audio.len()) * self.config.n_mfcc];
        self.compute_into(audio, &mut out, &mut self.make_scratch())?;
        Ok(out)
    }
}
