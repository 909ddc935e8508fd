//! The response's sample rate, converted at the edge: a voice renders at its
//! own rate (16384 Hz for the paper's voices) and a response leaves at the
//! rate its request asked for (24 kHz unless told otherwise, OpenAI's rate),
//! one converter per request, fed each block as the sampler makes it.
//!
//! The converter is rubato's FFT resampler (as `dv-audio` uses for whole
//! files: windowed sinc, Blackman-Harris anti-aliasing), taking chunks of
//! [`CHUNK`] input samples, wherever its smallest block,
//! `from / gcd(from, to)` input samples, fits in a chunk: from 16384 Hz to
//! 8, 16, 24 and 48 kHz. Its delay is half an FFT (187 samples at 24 kHz,
//! 8 ms), dropped from the start of the output, and it ran about 3,900x
//! real time on one core of the dev VM (the sinc resampler below, 300x), so
//! a server of thousands of GPU streams spends little of its CPU on it. Where the block is longer
//! (16384 to 22050 Hz: 8192 samples, half a second, which would hold a
//! stream's first audio back that long) the converter is rubato's sinc
//! resampler instead (`Async` at a fixed ratio; 128-tap Blackman-Harris
//! sinc, cubic interpolation, automatic cutoff): any chunk, a delay of 64
//! input samples, about 300x real time.
//!
//! # Invariants
//!
//! * `n` input samples become exactly [`out_len`]`(n) = ceil(n · to / from)`
//!   output samples, aligned with the input to within a sample.
//! * The output does not depend on how the input was split into blocks.
//! * Equal rates pass the samples through unchanged (no filter at all).

use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Async, Fft, FixedAsync, FixedSync, Resampler, SincInterpolationParameters, WindowFunction};

use crate::error::ApiError;

/// Input samples per resampler call (the FFT resampler rounds it up to its
/// smallest block): 16 ms at 16384 Hz, so a block of about 100 ms leaves
/// with at most this much of it held back.
pub(crate) const CHUNK: usize = 256;

/// Taps of the sinc filter.
const SINC_LEN: usize = 128;

/// Output samples for `n` input samples at `from` Hz resampled to `to` Hz:
/// `ceil(n · to / from)`.
pub(crate) fn out_len(n: usize, from: u32, to: u32) -> usize {
    (n as u64 * to as u64).div_ceil(from.max(1) as u64) as usize
}

/// One request's streaming rate converter of 16-bit mono samples.
pub(crate) struct RateConverter {
    from: u32,
    to: u32,
    /// `None`: equal rates, samples pass through.
    inner: Option<Box<dyn Resampler<f32>>>,
    /// Input samples per call.
    chunk: usize,
    /// Input not yet a whole chunk, as floats.
    pending: Vec<f32>,
    /// One call's output.
    scratch: Vec<f32>,
    /// Output samples still to drop (the resampler's delay).
    trim: usize,
    /// Input samples pushed, output samples handed out.
    taken: usize,
    given: usize,
}

impl RateConverter {
    /// A converter from `from` Hz to `to` Hz.
    pub(crate) fn new(from: u32, to: u32) -> Result<Self, ApiError> {
        if from == 0 || to == 0 {
            return Err(ApiError::internal(format!("cannot resample {from} Hz to {to} Hz")));
        }
        let fail =
            |e: rubato::ResamplerConstructionError| ApiError::internal(format!("resampler {from} Hz to {to} Hz: {e}"));
        let inner: Option<Box<dyn Resampler<f32>>> = if from == to {
            None
        } else if from / gcd(from, to) <= CHUNK as u32 {
            Some(Box::new(Fft::<f32>::new(from as usize, to as usize, CHUNK, 1, FixedSync::Input).map_err(fail)?))
        } else {
            let params = SincInterpolationParameters::new(SINC_LEN, WindowFunction::BlackmanHarris2);
            let ratio = to as f64 / from as f64;
            Some(Box::new(Async::<f32>::new_sinc(ratio, 1.0, &params, CHUNK, 1, FixedAsync::Input).map_err(fail)?))
        };
        let (trim, scratch, chunk) = match &inner {
            Some(r) => (r.output_delay(), vec![0.0; r.output_frames_max()], r.input_frames_next()),
            None => (0, Vec::new(), CHUNK),
        };
        let pending = Vec::with_capacity(4 * chunk);
        Ok(Self { from, to, inner, chunk, pending, scratch, trim, taken: 0, given: 0 })
    }

    /// Output samples handed out so far.
    pub(crate) fn given(&self) -> usize {
        self.given
    }

    /// Converts `block` and appends to `out` what is ready (all but less
    /// than a chunk of it, and the resampler's delay).
    pub(crate) fn push(&mut self, block: &[i16], out: &mut Vec<i16>) -> Result<(), ApiError> {
        self.taken += block.len();
        if self.inner.is_none() {
            self.given += block.len();
            out.extend_from_slice(block);
            return Ok(());
        }
        self.pending.extend(block.iter().map(|&v| v as f32 / 32768.0));
        let mut at = 0;
        while self.pending.len() - at >= self.chunk {
            self.convert(at, usize::MAX, out)?;
            at += self.chunk;
        }
        self.pending.drain(..at);
        Ok(())
    }

    /// Appends the rest to `out`: the input pushed so far has then given
    /// exactly [`out_len`] samples in all.
    pub(crate) fn finish(&mut self, out: &mut Vec<i16>) -> Result<(), ApiError> {
        if self.inner.is_none() {
            return Ok(());
        }
        let want = out_len(self.taken, self.from, self.to);
        // The tail, then silence, until the delay has passed.
        self.pending.resize(self.chunk, 0.0);
        while self.given < want {
            self.convert(0, want, out)?;
            self.pending.fill(0.0);
        }
        self.pending.clear();
        Ok(())
    }

    /// Resamples `pending[at..at + chunk]`, appending to `out` until
    /// `given` reaches `limit`.
    fn convert(&mut self, at: usize, limit: usize, out: &mut Vec<i16>) -> Result<(), ApiError> {
        let Some(r) = self.inner.as_mut() else { return Ok(()) };
        let fail = |e: String| ApiError::internal(format!("resampling {} Hz to {} Hz: {e}", self.from, self.to));
        let n = self.chunk;
        let input = InterleavedSlice::new(&self.pending[at..at + n], 1, n).map_err(|e| fail(e.to_string()))?;
        let frames = self.scratch.len();
        let mut output = InterleavedSlice::new_mut(&mut self.scratch, 1, frames).map_err(|e| fail(e.to_string()))?;
        let (_, produced) = r.process_into_buffer(&input, &mut output, None).map_err(|e| fail(e.to_string()))?;
        let skip = self.trim.min(produced);
        self.trim -= skip;
        for &v in &self.scratch[skip..produced] {
            if self.given >= limit {
                break;
            }
            out.push((v * 32768.0).round().clamp(-32768.0, 32767.0) as i16);
            self.given += 1;
        }
        Ok(())
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `seconds` of a sine of `hz` at `rate`, amplitude 0.5.
    fn sine(hz: f64, rate: u32, seconds: f64) -> Vec<i16> {
        let n = (seconds * rate as f64) as usize;
        (0..n)
            .map(|i| (0.5 * 32768.0 * (2.0 * std::f64::consts::PI * hz * i as f64 / rate as f64).sin()) as i16)
            .collect()
    }

    /// Pushes `input` in blocks of `block` and finishes.
    fn convert(input: &[i16], from: u32, to: u32, block: usize) -> Vec<i16> {
        let mut c = RateConverter::new(from, to).unwrap();
        let mut out = Vec::new();
        for b in input.chunks(block) {
            c.push(b, &mut out).unwrap();
        }
        c.finish(&mut out).unwrap();
        assert_eq!(c.given(), out.len());
        out
    }

    /// The frequency from the zero crossings of `x[a..b]` at `rate`.
    fn crossings_hz(x: &[i16], rate: u32) -> f64 {
        let (a, b) = (x.len() / 10, x.len() * 9 / 10);
        let ups: Vec<usize> = (a + 1..b).filter(|&i| x[i - 1] < 0 && x[i] >= 0).collect();
        let (first, last) = (ups[0], *ups.last().unwrap());
        (ups.len() - 1) as f64 * rate as f64 / (last - first) as f64
    }

    fn rms(x: &[i16]) -> f64 {
        let (a, b) = (x.len() / 10, x.len() * 9 / 10);
        (x[a..b].iter().map(|&v| (v as f64 / 32768.0).powi(2)).sum::<f64>() / (b - a) as f64).sqrt()
    }

    #[test]
    fn a_sine_keeps_its_frequency_level_and_length() {
        let input = sine(440.0, 16384, 1.0);
        assert!((crossings_hz(&input, 16384) - 440.0).abs() < 0.5);
        for to in [8000, 16000, 22050, 24000, 48000] {
            let out = convert(&input, 16384, to, dv_speak::DEFAULT_BLOCK);
            assert_eq!(out.len(), out_len(input.len(), 16384, to), "{to} Hz");
            assert_eq!(out.len(), to as usize, "one second at {to} Hz");
            let hz = crossings_hz(&out, to);
            assert!((hz - 440.0).abs() < 0.5, "{to} Hz: a 440 Hz sine came out at {hz} Hz");
            let level = rms(&out);
            assert!((level - 0.5 / 2f64.sqrt()).abs() < 0.01, "{to} Hz: RMS {level}");
        }
    }

    #[test]
    fn the_output_lines_up_with_the_input_to_within_a_sample() {
        // A click at 0.25 s lands at 0.25 s, through either resampler.
        let mut input = vec![0i16; 16384 / 2];
        input[4096] = 20000;
        for to in [24000u32, 22050, 48000, 8000] {
            let out = convert(&input, 16384, to, 1000);
            let peak = (0..out.len()).max_by_key(|&i| out[i].unsigned_abs()).unwrap();
            let want = to as f64 / 4.0;
            assert!((peak as f64 - want).abs() <= 1.0, "{to} Hz: the click is at sample {peak}, not {want}");
        }
    }

    #[test]
    fn blocks_do_not_change_the_output() {
        let input = sine(300.0, 16384, 0.7);
        for to in [24000, 22050] {
            let whole = convert(&input, 16384, to, input.len());
            for block in [1, 100, CHUNK, 1638, 5000] {
                assert_eq!(convert(&input, 16384, to, block), whole, "{to} Hz, blocks of {block}");
            }
        }
    }

    #[test]
    fn streaming_holds_back_less_than_a_chunk() {
        let mut c = RateConverter::new(16384, 24000).unwrap();
        let mut out = Vec::new();
        c.push(&sine(440.0, 16384, 0.1), &mut out).unwrap();
        let ratio = 24000.0 / 16384.0;
        let held = 1638.0 * ratio - out.len() as f64;
        assert!(held > 0.0 && held < (CHUNK + SINC_LEN) as f64 * ratio, "{held} samples held back");
        // 22050 Hz takes the sinc resampler: as little held back.
        let mut c = RateConverter::new(16384, 22050).unwrap();
        let mut out = Vec::new();
        c.push(&sine(440.0, 16384, 0.1), &mut out).unwrap();
        let ratio = 22050.0 / 16384.0;
        let held = 1638.0 * ratio - out.len() as f64;
        assert!(held > 0.0 && held < (CHUNK + SINC_LEN) as f64 * ratio, "{held} samples held back at 22050 Hz");
    }

    #[test]
    fn equal_rates_pass_through_and_a_tone_above_nyquist_is_filtered() {
        let input = sine(440.0, 16384, 0.3);
        assert_eq!(convert(&input, 16384, 16384, 1638), input);
        // 6 kHz cannot be said at 8 kHz: the filter removes it, not folds it.
        let out = convert(&sine(6000.0, 16384, 0.5), 16384, 8000, 1638);
        assert!(rms(&out) < 0.005, "RMS {} of a 6 kHz tone at 8 kHz", rms(&out));
    }

    #[test]
    fn out_len_rounds_up() {
        assert_eq!(out_len(16384, 16384, 24000), 24000);
        assert_eq!(out_len(1, 16384, 24000), 2);
        assert_eq!(out_len(0, 16384, 24000), 0);
        assert_eq!(out_len(1638, 16384, 16384), 1638);
    }
}
