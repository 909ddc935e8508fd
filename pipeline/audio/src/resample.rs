//! Sample-rate conversion with rubato's FFT resampler (windowed sinc,
//! Blackman-Harris anti-aliasing): the model rate is 16384 Hz (Deep Voice
//! App. A.3), any rate configurable.

use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Resampler};

use crate::AudioError;

/// Chunk size of the FFT resampler, in input frames.
const CHUNK: usize = 1024;

/// Resamples mono audio from `from` Hz to `to` Hz. The output has
/// `ceil(len * to / from)` samples, aligned with the input to within a
/// sample (the resampler's delay is removed; at 16000 → 16384 Hz a lead of
/// half an output sample remains, measured by the alignment test). Equal
/// rates copy the input.
pub fn resample(input: &[f32], from: u32, to: u32) -> Result<Vec<f32>, AudioError> {
    if from == to {
        return Ok(input.to_vec());
    }
    let fail = |reason: String| AudioError::Resample { from, to, reason };
    if from == 0 || to == 0 {
        return Err(fail("zero rate".into()));
    }
    let mut r =
        Fft::<f32>::new(from as usize, to as usize, CHUNK, 1, FixedSync::Input).map_err(|e| fail(e.to_string()))?;
    let want = (input.len() as u64 * to as u64).div_ceil(from as u64) as usize;
    let needed = r.process_all_needed_output_len(input.len());
    let mut out = vec![0.0f32; needed];
    let src = InterleavedSlice::new(input, 1, input.len()).map_err(|e| fail(e.to_string()))?;
    let mut dst = InterleavedSlice::new_mut(&mut out, 1, needed).map_err(|e| fail(e.to_string()))?;
    let (_, produced) =
        r.process_all_into_buffer(&src, &mut dst, input.len(), None).map_err(|e| fail(e.to_string()))?;
    out.truncate(produced.min(want));
    out.resize(want, 0.0);
    Ok(out)
}
