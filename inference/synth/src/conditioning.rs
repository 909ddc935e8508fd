//! The conditioning signal L at the frame rate: `[F, ℓ·2r]`, the output of
//! the conditioning network before upsampling (FORMAT.md).

use crate::error::SynthError;

/// Per-frame conditioning for every WaveNet layer, row-major `[F, ℓ·2r]`.
/// Row `f` is `[L_0; L_1; …; L_{ℓ−1}]` with `L_i = [L_h; L_g]` (2r each).
/// Audio sample n uses row `n / hop` (upsampling by repetition).
#[derive(Debug, Clone, PartialEq)]
pub struct Conditioning {
    frames: usize,
    width: usize,
    data: Vec<f32>,
    /// Whether each frame is voiced (the input frames' voiced flag), for
    /// [`crate::Sampling::VoicedTemperature`]; `None`: every frame is.
    voiced: Option<Vec<bool>>,
}

impl Conditioning {
    /// Wraps `[frames, width]` row-major data; every value must be finite.
    pub fn new(frames: usize, width: usize, data: Vec<f32>) -> Result<Self, SynthError> {
        if data.len() != frames * width {
            return Err(SynthError::Shape { what: "conditioning", expected: frames * width, got: data.len() });
        }
        if let Some(index) = data.iter().position(|v| !v.is_finite()) {
            return Err(SynthError::NonFinite { what: "conditioning", index });
        }
        Ok(Self { frames, width, data, voiced: None })
    }

    /// The same rows with a voicing flag per frame (`[F]`).
    pub fn with_voiced(mut self, voiced: Vec<bool>) -> Result<Self, SynthError> {
        if voiced.len() != self.frames {
            return Err(SynthError::Shape { what: "voicing mask", expected: self.frames, got: voiced.len() });
        }
        self.voiced = Some(voiced);
        Ok(self)
    }

    /// Whether frame `f` is voiced (true without a mask).
    #[inline]
    pub fn voiced(&self, f: usize) -> bool {
        self.voiced.as_ref().is_none_or(|v| v.get(f).copied().unwrap_or(true))
    }

    pub fn frames(&self) -> usize {
        self.frames
    }

    /// `ℓ · 2r`.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Row `f`: `[ℓ·2r]`.
    #[inline]
    pub fn frame(&self, f: usize) -> &[f32] {
        &self.data[f * self.width..(f + 1) * self.width]
    }

    pub fn data(&self) -> &[f32] {
        &self.data
    }
}
