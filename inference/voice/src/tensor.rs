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

    /// Little-endian bytes, as safetensors stores them.
    pub(crate) fn to_le_bytes(&self) -> Vec<u8> {
        self.data.iter().flat_map(|v| v.to_le_bytes()).collect()
    }
}
