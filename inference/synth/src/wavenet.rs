//! The WaveNet's weights as the voice stores them (row-major `[out, in]`),
//! shared by the scalar reference, the packers of the SIMD kernels and the
//! GPU layouts of `dv-gpu`.

use dv_voice::Voice;

use crate::error::SynthError;

/// Weights of one residual layer.
#[derive(Debug, Clone)]
pub struct LayerWeights {
    pub dilation: usize,
    pub w_prev: Vec<f32>, // [2r, r]
    pub w_cur: Vec<f32>,  // [2r, r]
    pub bias: Vec<f32>,   // [2r]
    /// `Some((w_res [r, r], b_res [r]))` for every layer but the last.
    pub res: Option<(Vec<f32>, Vec<f32>)>,
}

/// The autoregressive WaveNet (App. A.1, FORMAT.md "WaveNet").
#[derive(Debug, Clone)]
pub struct WavenetWeights {
    pub r: usize,
    pub s: usize,
    pub a: usize,
    pub embed_cur: Vec<f32>,  // [a, r]
    pub embed_prev: Vec<f32>, // [a, r]
    pub embed_bias: Vec<f32>, // [r]
    pub layers: Vec<LayerWeights>,
    pub skip_w: Vec<f32>, // [s, ℓ·r]
    pub skip_b: Vec<f32>, // [s]
    pub relu_w: Vec<f32>, // [a, s]
    pub relu_b: Vec<f32>, // [a]
    pub out_w: Vec<f32>,  // [a, a]
    pub out_b: Vec<f32>,  // [a]
}

impl WavenetWeights {
    pub fn new(voice: &Voice) -> Result<Self, SynthError> {
        let cfg = voice.config();
        let w = cfg.wavenet;
        let t = |name: &str| -> Result<Vec<f32>, SynthError> { Ok(voice.tensor(name)?.data().to_vec()) };
        let mut layers = Vec::with_capacity(w.layers);
        for i in 0..w.layers {
            let res = if i + 1 < w.layers {
                Some((t(&format!("wavenet.layers.{i}.w_res"))?, t(&format!("wavenet.layers.{i}.b_res"))?))
            } else {
                None
            };
            layers.push(LayerWeights {
                dilation: w.dilation(i),
                w_prev: t(&format!("wavenet.layers.{i}.w_prev"))?,
                w_cur: t(&format!("wavenet.layers.{i}.w_cur"))?,
                bias: t(&format!("wavenet.layers.{i}.bias"))?,
                res,
            });
        }
        Ok(Self {
            r: w.residual_channels,
            s: w.skip_channels,
            a: cfg.quantization_channels,
            embed_cur: t("wavenet.embed_cur")?,
            embed_prev: t("wavenet.embed_prev")?,
            embed_bias: t("wavenet.embed_bias")?,
            layers,
            skip_w: t("wavenet.skip.weight")?,
            skip_b: t("wavenet.skip.bias")?,
            relu_w: t("wavenet.relu.weight")?,
            relu_b: t("wavenet.relu.bias")?,
            out_w: t("wavenet.out.weight")?,
            out_b: t("wavenet.out.bias")?,
        })
    }

    pub fn layers(&self) -> usize {
        self.layers.len()
    }
}
