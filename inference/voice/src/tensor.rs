//! Owned float32 tensors: a row-major `Vec<f32>` and its shape.

use crate::error::VoiceError;

/// A row-major float32 tensor. `data.len()` is the product of `shape`
/// (checked by [`Tensor::new`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    shape: Vec<usize>,
    data: Vec<f32>,
}

impl Tensor {
    /// Wraps `data` with `shape`; `name` is only for the error.
    pub fn new(name: &str, shape: Vec<usize>, data: Vec<f32>) -> Result<Self, VoiceError> {
        let expected: usize = shape.iter().product();
        if expected != data.len() {
            return Err(VoiceError::DataLength { name: name.to_string(), shape, expected, got: data.len() });
        }
        Ok(Self { shape, data })
    }

    /// A tensor of zeros.
    pub fn zeros(shape: Vec<usize>) -> Self {
        let n = shape.iter().product();
        Self { shape, data: vec![0.0; n] }
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn data(&self) -> &[f32] {
        &self.data
    }

    pub fn data_mut(&mut self) -> &mut [f32] {
        &mut self.data
    }

    pub fn into_data(self) -> Vec<f32> {
        self.data
    }

    /// Whether every value survives a round trip through IEEE binary16
    /// exactly, so that storing the tensor in half precision loses nothing.
    pub fn is_half_exact(&self) -> bool {
        self.data.iter().all(|&v| half::f16::from_f32(v).to_f32().to_bits() == v.to_bits())
    }

    /// Rounds every value to the nearest IEEE binary16 value (kept as f32),
    /// so that the tensor is [`Tensor::is_half_exact`]. Values beyond the
    /// binary16 range become infinite, which [`crate::Voice`] refuses.
    pub fn round_to_half(&mut self) {
        for v in &mut self.data {
            *v = half::f16::from_f32(*v).to_f32();
        }
    }

    /// Little-endian bytes as safetensors stores them: binary16 when that is
    /// lossless ([`Tensor::is_half_exact`]), float32 otherwise.
    pub(crate) fn to_le_bytes(&self) -> (safetensors::Dtype, Vec<u8>) {
        if self.is_half_exact() {
            (safetensors::Dtype::F16, self.data.iter().flat_map(|&v| half::f16::from_f32(v).to_le_bytes()).collect())
        } else {
            (safetensors::Dtype::F32, self.data.iter().flat_map(|v| v.to_le_bytes()).collect())
        }
    }
}
