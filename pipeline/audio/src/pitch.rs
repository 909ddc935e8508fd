//! F0 by Praat's autocorrelation pitch tracker ("To Pitch (ac)", Boersma
//! 1993), re-implemented natively with Deep Voice's settings (App. A.3:
//! floor 75 Hz, ceiling 500 Hz, one frame per 1/256 s) and Praat's defaults
//! for the rest.
//!
//! The steps follow Praat's `Sound_to_Pitch_any` with the Hanning method:
//!
//! 1. Frames: a window of 3 periods of the floor (40 ms), placed as Praat's
//!    `Sampled_shortTermAnalysis` places them: `floor((T - window) / step) + 1`
//!    frames centred in the signal.
//! 2. Per frame: subtract the mean over one longest period on each side,
//!    apply a Hanning window, take the autocorrelation (FFT of the power
//!    spectrum), normalise by lag 0 and divide by the window's own
//!    normalised autocorrelation. The frame's intensity is its peak (within
//!    half a longest period of the centre) over the signal's global peak.
//! 3. Candidates: local maxima of the autocorrelation above half the voicing
//!    threshold, between the ceiling's lag and the floor's, located by a
//!    parabola, then refined by maximising a windowed-sinc interpolation
//!    (Brent's method, 70 or 700 taps per side); strengths above 1 are
//!    reflected (1/r). At most 15 candidates per frame including "unvoiced".
//! 4. Path: Viterbi over frames with octave cost, octave-jump cost and
//!    voiced/unvoiced cost (both scaled by 0.01 s / step), and an unvoiced
//!    strength raised in quiet frames (silence threshold).

use std::f64::consts::PI;
use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};

use crate::AudioError;

/// Settings of Praat's "To Pitch (ac)".
#[derive(Debug, Clone, PartialEq)]
pub struct PitchConfig {
    /// Seconds between frames: 1/256 (the conditioning rate, App. A.3).
    pub time_step: f64,
    /// Hz: 75 (App. A.3).
    pub floor: f64,
    /// Hz: 500 (App. A.3).
    pub ceiling: f64,
    /// Praat's default: 15 (the unvoiced candidate included).
    pub max_candidates: usize,
    /// Praat's default: 0.03.
    pub silence_threshold: f64,
    /// Praat's default: 0.45.
    pub voicing_threshold: f64,
    /// Praat's default: 0.01 per octave.
    pub octave_cost: f64,
    /// Praat's default: 0.35.
    pub octave_jump_cost: f64,
    /// Praat's default: 0.14.
    pub voiced_unvoiced_cost: f64,
}

impl Default for PitchConfig {
    fn default() -> Self {
        PitchConfig {
            time_step: 1.0 / 256.0,
            floor: 75.0,
            ceiling: 500.0,
            max_candidates: 15,
            silence_threshold: 0.03,
            voicing_threshold: 0.45,
            octave_cost: 0.01,
            octave_jump_cost: 0.35,
            voiced_unvoiced_cost: 0.14,
        }
    }
}

/// An F0 contour: frame `i` is centred at `start + i * step` seconds from
/// the first sample's start; 0 Hz where unvoiced.
#[derive(Debug, Clone, PartialEq)]
pub struct PitchTrack {
    pub start: f64,
    pub step: f64,
    pub hz: Vec<f32>,
}

#[derive(Debug, Clone, Copy)]
struct Candidate {
    frequency: f64,
    strength: f64,
}

/// A planned pitch tracker for one sample rate.
pub struct Pitch {
    config: PitchConfig,
    dx: f64,
    nsamp_period: usize,
    halfnsamp_period: usize,
    nsamp_window: usize,
    halfnsamp_window: usize,
    max_lag: usize,
    brent_ixmax: usize,
    window: Vec<f64>,
    window_r: Vec<f64>,
    forward: Arc<dyn RealToComplex<f64>>,
    inverse: Arc<dyn ComplexToReal<f64>>,
}

/// Praat's `NUM_interpolate_sinc` with Praat's 1-based positions: `x = 1`
/// is `ys[0]`.
fn interpolate_sinc(ys: &[f64], x: f64, max_depth: usize) -> f64 {
    let n = ys.len();
    let y = |i: usize| ys[i - 1];
    let midleft = x.floor() as isize;
    let midright = midleft + 1;
    if x > n as f64 {
        return y(n);
    }
    if x < 1.0 {
        return y(1);
    }
    if x == midleft as f64 {
        return y(midleft as usize);
    }
    let mut depth = max_depth as isize;
    depth = depth.min(midright - 1).min(n as isize - midleft);
    if depth <= 0 {
        return y(x.round() as usize);
    }
    let (ml, mr) = (midleft as usize, midright as usize);
    if depth == 1 {
        return y(ml) + (x - midleft as f64) * (y(mr) - y(ml));
    }
    if depth == 2 {
        let (yl, yr) = (y(ml), y(mr));
        let (dyl, dyr) = (0.5 * (yr - y(ml - 1)), 0.5 * (y(mr + 1) - yl));
        let (fil, fir) = (x - midleft as f64, midright as f64 - x);
        return yl * fir + yr * fil - fil * fir * (0.5 * (dyr - dyl) + (fil - 0.5) * (dyl + dyr - 2.0 * (yr - yl)));
    }
    let left = midright - depth;
    let right = midleft + depth;
    // The left side runs from midleft down to left, the right from midright up;
    // sin(pi (x - midleft)) = sin(pi (midright - x)), so one sine serves both.
    let (l0, ml0, mr0, r0) = (left as usize - 1, midleft as usize - 1, midright as usize - 1, right as usize - 1);
    let frac = x - midleft as f64;
    let half_sin = 0.5 * (PI * frac).sin();
    let lefts = &ys[l0..=ml0];
    let rights = &ys[mr0..=r0];
    let left_sum = sinc_side(lefts.len(), |k| lefts[lefts.len() - 1 - k], frac, x - left as f64 + 1.0, half_sin);
    let right_sum = sinc_side(rights.len(), |k| rights[k], 1.0 - frac, right as f64 - x + 1.0, half_sin);
    left_sum + right_sum
}

/// `sum_k value(k) w_k` over Praat's raised-cosine-windowed sinc weights at
/// distances `start + k`: `w_k = sin(pi (start + k)) / (pi (start + k))
/// × (1 + cos(pi (start + k) / span)) / 2`. Praat walks the cosine by one
/// rotation per weight, a serial chain; here four lanes each rotate by four
/// steps, so the chain is a quarter as long and the lanes vectorise.
#[inline(always)]
fn sinc_side(n: usize, value: impl Fn(usize) -> f64, start: f64, span: f64, half_sin: f64) -> f64 {
    const LANES: usize = 4;
    let a0 = PI * start;
    let aa0 = a0 / span;
    let daa = PI / span;
    let (sd, cd) = daa.sin_cos();
    let (s0, c0) = aa0.sin_cos();
    let (mut c, mut s) = ([c0; LANES], [s0; LANES]);
    for j in 1..LANES {
        c[j] = c[j - 1] * cd - s[j - 1] * sd;
        s[j] = c[j - 1] * sd + s[j - 1] * cd;
    }
    let (c2, s2) = (cd * cd - sd * sd, 2.0 * cd * sd);
    let (c4, s4) = (c2 * c2 - s2 * s2, 2.0 * c2 * s2);
    let mut a = [0.0; LANES];
    let mut hs = [0.0; LANES];
    for j in 0..LANES {
        a[j] = a0 + j as f64 * PI;
        hs[j] = if j % 2 == 0 { half_sin } else { -half_sin };
    }
    let mut acc = [0.0; LANES];
    let blocks = n / LANES;
    for b in 0..blocks {
        for j in 0..LANES {
            acc[j] += value(LANES * b + j) * (hs[j] / a[j] * (1.0 + c[j]));
            let nc = c[j] * c4 - s[j] * s4;
            s[j] = c[j] * s4 + s[j] * c4;
            c[j] = nc;
            a[j] += LANES as f64 * PI;
        }
    }
    for j in 0..n - LANES * blocks {
        acc[j] += value(LANES * blocks + j) * (hs[j] / a[j] * (1.0 + c[j]));
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// Praat's `NUMminimize_brent` (netlib `fmin`): the minimum of `f` on `[a, b]`.
fn minimize_brent(f: &dyn Fn(f64) -> f64, mut a: f64, mut b: f64, tol: f64) -> (f64, f64) {
    let golden = 1.0 - 0.618_033_988_749_894_9;
    let sqrt_eps = f64::EPSILON.sqrt();
    let mut v = a + golden * (b - a);
    let mut fv = f(v);
    let (mut x, mut w) = (v, v);
    let (mut fx, mut fw) = (fv, fv);
    for _ in 0..60 {
        let middle = 0.5 * (a + b);
        let tol_act = sqrt_eps * x.abs() + tol / 3.0;
        if (x - middle).abs() + 0.5 * (b - a) <= 2.0 * tol_act {
            return (x, fx);
        }
        let mut step = golden * if x < middle { b - x } else { a - x };
        if (x - w).abs() >= tol_act {
            let t = (x - w) * (fx - fv);
            let mut q = (x - v) * (fx - fw);
            let mut p = (x - v) * q - (x - w) * t;
            q = 2.0 * (q - t);
            if q > 0.0 {
                p = -p;
            } else {
                q = -q;
            }
            if p.abs() < (step * q).abs() && p > q * (a - x + 2.0 * tol_act) && p < q * (b - x - 2.0 * tol_act) {
                step = p / q;
            }
        }
        if step.abs() < tol_act {
            step = if step > 0.0 { tol_act } else { -tol_act };
        }
        let t = x + step;
        let ft = f(t);
        if ft <= fx {
            if t < x {
                b = x;
            } else {
                a = x;
            }
            v = w;
            w = x;
            x = t;
            fv = fw;
            fw = fx;
            fx = ft;
        } else {
            if t < x {
                a = t;
            } else {
                b = t;
            }
            if ft <= fw || w == x {
                v = w;
                w = t;
                fv = fw;
                fw = ft;
            } else if ft <= fv || v == x || v == w {
                v = t;
                fv = ft;
            }
        }
    }
    (x, fx)
}

impl Pitch {
    /// Plans the tracker for audio at `sample_rate` Hz.
    pub fn new(config: &PitchConfig, sample_rate: u32) -> Result<Pitch, AudioError> {
        let c = config.clone();
        let bad = |reason: String| AudioError::Config { what: "pitch configuration", reason };
        if !(c.time_step > 0.0 && c.floor > 0.0 && c.ceiling > c.floor && c.max_candidates >= 2) {
            return Err(bad(format!(
                "step {} floor {} ceiling {} candidates {}",
                c.time_step, c.floor, c.ceiling, c.max_candidates
            )));
        }
        let dx = 1.0 / sample_rate as f64;
        let periods_per_window = 3.0;
        let nsamp_period = (1.0 / dx / c.floor).floor() as usize;
        let halfnsamp_period = nsamp_period / 2 + 1;
        let ceiling = c.ceiling.min(0.5 / dx);
        let dt_window = periods_per_window / c.floor;
        let halfnsamp_window = ((dt_window / dx).floor() as usize / 2).saturating_sub(1);
        if halfnsamp_window < 2 {
            return Err(bad("analysis window too short".into()));
        }
        let nsamp_window = halfnsamp_window * 2;
        let max_lag = ((nsamp_window as f64 / periods_per_window).floor() as usize + 2).min(nsamp_window);
        let interpolation_depth = 0.5;
        let brent_ixmax = (nsamp_window as f64 * interpolation_depth).floor() as usize;
        let mut nfft = 1;
        while (nfft as f64) < nsamp_window as f64 * (1.0 + interpolation_depth) {
            nfft *= 2;
        }
        let window: Vec<f64> =
            (1..=nsamp_window).map(|i| 0.5 - 0.5 * (i as f64 * 2.0 * PI / (nsamp_window as f64 + 1.0)).cos()).collect();
        let mut planner = RealFftPlanner::<f64>::new();
        let forward = planner.plan_fft_forward(nfft);
        let inverse = planner.plan_fft_inverse(nfft);
        let mut tracker = Pitch {
            config: PitchConfig { ceiling, ..c },
            dx,
            nsamp_period,
            halfnsamp_period,
            nsamp_window,
            halfnsamp_window,
            max_lag,
            brent_ixmax,
            window,
            window_r: Vec::new(),
            forward,
            inverse,
        };
        let w = tracker.window.clone();
        let mut wr = tracker.autocorrelation(&w)?;
        let w0 = wr[0];
        for v in wr.iter_mut() {
            *v /= w0;
        }
        tracker.window_r = wr;
        Ok(tracker)
    }

    /// Unnormalised linear autocorrelation of a frame (zero-padded FFT).
    fn autocorrelation(&self, frame: &[f64]) -> Result<Vec<f64>, AudioError> {
        let fft_err = |e: realfft::FftError| AudioError::Config { what: "FFT", reason: e.to_string() };
        let mut input = self.forward.make_input_vec();
        input[..frame.len()].copy_from_slice(frame);
        let mut spectrum = self.forward.make_output_vec();
        self.forward.process(&mut input, &mut spectrum).map_err(fft_err)?;
        for z in spectrum.iter_mut() {
            *z = Complex::new(z.norm_sqr(), 0.0);
        }
        let mut ac = self.inverse.make_output_vec();
        self.inverse.process(&mut spectrum, &mut ac).map_err(fft_err)?;
        Ok(ac)
    }

    /// The F0 contour of mono audio at the planned rate.
    pub fn track(&self, audio: &[f32]) -> Result<PitchTrack, AudioError> {
        let c = &self.config;
        let n = audio.len();
        let duration = n as f64 * self.dx;
        let dt_window = 3.0 / c.floor;
        let frames =
            if duration >= dt_window { ((duration - dt_window) / c.time_step).floor() as usize + 1 } else { 0 };
        let t1 = 0.5 * duration - 0.5 * frames as f64 * c.time_step + 0.5 * c.time_step;
        let mean = audio.iter().map(|v| *v as f64).sum::<f64>() / n.max(1) as f64;
        let global_peak = audio.iter().map(|v| (*v as f64 - mean).abs()).fold(0.0, f64::max);
        if frames == 0 || global_peak == 0.0 {
            return Ok(PitchTrack { start: t1, step: c.time_step, hz: vec![0.0; frames] });
        }
        let sample = |i: isize| if i >= 0 && (i as usize) < n { audio[i as usize] as f64 } else { 0.0 };
        let mut all = Vec::with_capacity(frames);
        let mut frame = vec![0.0; self.nsamp_window];
        for f in 0..frames {
            let t = t1 + f as f64 * c.time_step;
            // 0-based Praat sample indices: sample k lies at (k + 0.5) dx.
            let left = (t / self.dx - 0.5).floor() as isize;
            let right = left + 1;
            let (p, h) = (self.nsamp_period as isize, self.halfnsamp_window as isize);
            let local_mean = ((right - p)..=(left + p)).map(sample).sum::<f64>() / (left + p - (right - p) + 1) as f64;
            for (j, v) in frame.iter_mut().enumerate() {
                *v = (sample(right - h + j as isize) - local_mean) * self.window[j];
            }
            let lo = (self.halfnsamp_window + 1).saturating_sub(self.halfnsamp_period).max(1);
            let hi = (self.halfnsamp_window + self.halfnsamp_period).min(self.nsamp_window);
            let local_peak = frame[lo - 1..hi].iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let intensity = if local_peak > global_peak { 1.0 } else { local_peak / global_peak };
            let candidates = if local_peak == 0.0 { Vec::new() } else { self.candidates(&frame)? };
            all.push((intensity, candidates));
        }
        Ok(PitchTrack { start: t1, step: c.time_step, hz: self.path(&all) })
    }

    /// The voiced candidates of one windowed frame (the unvoiced one is implied).
    fn candidates(&self, frame: &[f64]) -> Result<Vec<Candidate>, AudioError> {
        let c = &self.config;
        let ac = self.autocorrelation(frame)?;
        let b = self.brent_ixmax;
        let r: Vec<f64> = (0..=b + 1).map(|i| if i == 0 { 1.0 } else { ac[i] / (ac[0] * self.window_r[i]) }).collect();
        // The array Praat interpolates in: y(j) = r[|j - b - 1|], j in 1..=2b+1.
        let ys: Vec<f64> = (0..=2 * b).map(|k| r[(k as isize - b as isize).unsigned_abs()]).collect();
        let ny = 2 * b + 1;
        let to_y = |lag: f64| lag + b as f64 + 1.0;
        let rate = 1.0 / self.dx;
        let mut cands: Vec<(Candidate, usize)> = Vec::new();
        let weight = |cand: &Candidate| cand.strength - c.octave_cost * (c.floor / cand.frequency).log2();
        let mut i = 2;
        while i < self.max_lag && i < b {
            if r[i] > 0.5 * c.voicing_threshold && r[i] > r[i - 1] && r[i] >= r[i + 1] {
                let dr = 0.5 * (r[i + 1] - r[i - 1]);
                let d2r = 2.0 * r[i] - r[i - 1] - r[i + 1];
                let frequency = rate / (i as f64 + dr / d2r);
                let mut strength = interpolate_sinc(&ys, to_y(rate / frequency), 30);
                if strength > 1.0 {
                    strength = 1.0 / strength;
                }
                let cand = Candidate { frequency, strength };
                if cands.len() + 1 < c.max_candidates {
                    cands.push((cand, i));
                } else {
                    let (weakest_at, weakest) = cands
                        .iter()
                        .enumerate()
                        .map(|(k, (cd, _))| (k, weight(cd)))
                        .fold((usize::MAX, 2.0), |acc, (k, w)| if w < acc.1 { (k, w) } else { acc });
                    if weight(&cand) > weakest && weakest_at != usize::MAX {
                        cands[weakest_at] = (cand, i);
                    }
                }
            }
            i += 1;
        }
        let mut out = Vec::with_capacity(cands.len());
        for (cand, imax) in cands {
            let depth = if cand.frequency > 0.3 * rate { 700 } else { 70 };
            let neg = |x: f64| -interpolate_sinc(&ys, x, depth);
            let ix = to_y(imax as f64);
            let (xmid, fmin) = if ix <= 1.0 || ix >= ny as f64 {
                (ix, -ys[ix as usize - 1])
            } else {
                minimize_brent(&neg, ix - 1.0, ix + 1.0, 1e-10)
            };
            let mut strength = -fmin;
            if strength > 1.0 {
                strength = 1.0 / strength;
            }
            out.push(Candidate { frequency: rate / (xmid - b as f64 - 1.0), strength });
        }
        Ok(out)
    }

    /// Praat's `Pitch_pathFinder`: the best path through the candidates.
    fn path(&self, frames: &[(f64, Vec<Candidate>)]) -> Vec<f32> {
        let c = &self.config;
        let correction = 0.01 / c.time_step;
        let (jump_cost, vu_cost) = (c.octave_jump_cost * correction, c.voiced_unvoiced_cost * correction);
        let voiced = |f: f64| f > 0.0 && f < c.ceiling;
        // Candidate 0 of every frame is "unvoiced" (frequency 0).
        let freqs: Vec<Vec<f64>> =
            frames.iter().map(|(_, cs)| std::iter::once(0.0).chain(cs.iter().map(|x| x.frequency)).collect()).collect();
        let mut delta: Vec<Vec<f64>> = frames
            .iter()
            .map(|(intensity, cs)| {
                let raw = if c.silence_threshold <= 0.0 {
                    0.0
                } else {
                    2.0 - intensity / (c.silence_threshold / (1.0 + c.voicing_threshold))
                };
                let unvoiced = c.voicing_threshold + raw.max(0.0);
                std::iter::once(unvoiced)
                    .chain(cs.iter().map(|x| {
                        if voiced(x.frequency) {
                            x.strength - c.octave_cost * (c.ceiling / x.frequency).log2()
                        } else {
                            unvoiced
                        }
                    }))
                    .collect()
            })
            .collect();
        let mut psi: Vec<Vec<usize>> = freqs.iter().map(|f| vec![0; f.len()]).collect();
        for t in 1..frames.len() {
            let (before, after) = delta.split_at_mut(t);
            let (prev, cur) = (&before[t - 1], &mut after[0]);
            for (k2, f2) in freqs[t].iter().enumerate() {
                let mut best = (-1e30, 0);
                for (k1, f1) in freqs[t - 1].iter().enumerate() {
                    let cost = match (voiced(*f1), voiced(*f2)) {
                        (false, false) => 0.0,
                        (true, true) => jump_cost * (f1 / f2).log2().abs(),
                        _ => vu_cost,
                    };
                    let value = prev[k1] - cost + cur[k2];
                    if value > best.0 {
                        best = (value, k1);
                    }
                }
                cur[k2] = best.0;
                psi[t][k2] = best.1;
            }
        }
        let mut hz = vec![0.0f32; frames.len()];
        let Some(last) = delta.last() else { return hz };
        let mut place = 0;
        for (k, v) in last.iter().enumerate() {
            if *v > last[place] {
                place = k;
            }
        }
        for t in (0..frames.len()).rev() {
            let f = freqs[t][place];
            hz[t] = if voiced(f) { f as f32 } else { 0.0 };
            place = psi[t][place];
        }
        hz
    }
}
