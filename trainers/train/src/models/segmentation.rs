//! The segmentation network of Deep Voice §3.2, trained with CTC on
//! phoneme-pair labels: two 2D convolutions over frequency × time (kernels
//! 9 × 5, unit stride), three bidirectional GRU layers of 512 cells per
//! direction, and a softmax over phoneme pairs plus the CTC blank.

use dv_torch::tch;
use dv_torch::tch::nn::{self, ConvConfigND, Module, RNN};
use dv_torch::tch::{Kind, Reduction, Tensor};

use super::model::{dropout, sorted_parameters, Batch, Model};
use crate::TrainError;

// Defined in dv-config with the run config, which parses them without libtorch.
pub use dv_config::SegmentationConfig;

pub struct Segmentation {
    pub config: SegmentationConfig,
    vs: nn::VarStore,
    conv1: nn::Conv<[i64; 2]>,
    conv2: nn::Conv<[i64; 2]>,
    /// Per layer: the forward and the backward direction.
    gru: Vec<(nn::GRU, nn::GRU)>,
    out: nn::Linear,
}

/// `[b, 1, 1, t]` float mask, 1 on each example's frames and 0 past its length.
fn frame_mask(lengths: &[i64], t: i64, device: tch::Device) -> Result<Tensor, TrainError> {
    let steps = Tensor::f_arange(t, (Kind::Int64, device))?.f_view([1, t])?;
    let lens = Tensor::from_slice(lengths).f_to_device(device)?.f_view([-1, 1])?;
    Ok(steps.f_lt_tensor(&lens)?.f_to_kind(Kind::Float)?.f_view([lengths.len() as i64, 1, 1, t])?)
}

/// Reverses each sequence of `x` (`[b, t, f]`) within its own length,
/// leaving the padding in place, so a backward recurrence starts at each
/// example's last frame rather than in the padding. Its own inverse.
fn reverse_within(x: &Tensor, lengths: &[i64]) -> Result<Tensor, TrainError> {
    let (b, t, f) = (x.size()[0], x.size()[1], x.size()[2]);
    let steps = Tensor::f_arange(t, (Kind::Int64, x.device()))?.f_view([1, t])?;
    let lens = Tensor::from_slice(lengths).f_to_device(x.device())?.f_view([-1, 1])?;
    let rev = lens.f_sub_scalar(1)?.f_sub(&steps)?; // [b, t]: len - 1 - t
    let idx = rev.f_where_self(&steps.f_lt_tensor(&lens)?, &steps.f_expand([b, t], false)?)?; // [b, t]
    Ok(x.f_gather(1, &idx.f_unsqueeze(-1)?.f_expand([b, t, f], false)?, false)?)
}

impl Segmentation {
    pub fn new(config: &SegmentationConfig, device: tch::Device) -> Result<Segmentation, TrainError> {
        config.check()?;
        let c = config.clone();
        let vs = nn::VarStore::new(device);
        let root = vs.root();
        let conv = |p: nn::Path<'_>, cin: i64| {
            let cfg = ConvConfigND::<[i64; 2]> {
                stride: [1, 1],
                padding: [c.kernel_freq / 2, c.kernel_time / 2],
                dilation: [1, 1],
                groups: 1,
                bias: true,
                ws_init: nn::Init::Kaiming {
                    dist: nn::init::NormalOrUniform::Uniform,
                    fan: nn::init::FanInOut::FanIn,
                    non_linearity: nn::init::NonLinearity::ReLU,
                },
                bs_init: nn::Init::Const(0.0),
                padding_mode: nn::PaddingMode::Zeros,
            };
            nn::conv(p, cin, c.conv_channels, [c.kernel_freq, c.kernel_time], cfg)
        };
        let conv1 = conv(&root / "conv1", 1);
        let conv2 = conv(&root / "conv2", c.conv_channels);
        // Each bidirectional layer is two unidirectional GRUs, so the backward
        // direction can run on sequences reversed within their lengths
        // (results then do not depend on how much padding a batch has).
        let rnn = nn::RNNConfig { num_layers: 1, batch_first: true, ..Default::default() };
        let gru = (0..c.gru_layers)
            .map(|l| {
                let input = if l == 0 { c.conv_channels * c.mfcc } else { 2 * c.gru };
                let p = &root / "gru" / l;
                (nn::gru(&p / "fwd", input, c.gru, rnn), nn::gru(&p / "bwd", input, c.gru, rnn))
            })
            .collect();
        let out = nn::linear(&root / "out", 2 * c.gru, c.classes, Default::default());
        Ok(Segmentation { config: c, vs, conv1, conv2, gru, out })
    }

    /// Log-probabilities over the classes. Frames past an example's length
    /// never influence its frames within it.
    ///
    /// # Shapes
    /// `inputs`: `[b, t, mfcc]` → `[t, b, classes]` (time-major, for CTC)
    pub fn log_probs(&self, batch: &Batch, train: bool, seed: u64) -> Result<Tensor, TrainError> {
        let inputs = &batch.inputs;
        let (b, t) = (inputs.size()[0], inputs.size()[1]);
        let mask = frame_mask(&batch.input_lengths, t, inputs.device())?; // [b, 1, 1, t]
        let x = inputs.f_transpose(1, 2)?.f_unsqueeze(1)?; // [b, 1, mfcc, t]
        let x = self.conv1.forward(&x).f_relu()?.f_mul(&mask)?; // [b, c, mfcc, t]
        let x = self.conv2.forward(&x).f_relu()?.f_mul(&mask)?;
        let mut x = x.f_permute([0, 3, 1, 2])?.f_reshape([b, t, -1])?; // [b, t, c * mfcc]
        x = dropout(&x, self.config.dropout, train, seed, 1, &batch.example_ids)?;
        for (fwd, bwd) in &self.gru {
            let (f, _) = fwd.seq(&x); // [b, t, gru]
            let (r, _) = bwd.seq(&reverse_within(&x, &batch.input_lengths)?);
            let r = reverse_within(&r, &batch.input_lengths)?; // [b, t, gru]
            x = Tensor::f_cat(&[f, r], 2)?; // [b, t, 2 gru]
        }
        x = dropout(&x, self.config.dropout, train, seed, 2, &batch.example_ids)?;
        let x = self.out.forward(&x); // [b, t, classes]
        Ok(x.f_log_softmax(-1, Kind::Float)?.f_transpose(0, 1)?) // [t, b, classes]
    }
}

impl Model for Segmentation {
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        sorted_parameters(&self.vs)
    }

    fn loss_sum(&self, batch: &Batch, train: bool, seed: u64) -> Result<Tensor, TrainError> {
        let lp = self.log_probs(batch, train, seed)?;
        let per_example = Tensor::f_ctc_loss(
            &lp,
            &batch.targets,
            batch.input_lengths.as_slice(),
            batch.target_lengths.as_slice(),
            0,
            Reduction::None,
            true,
        )?;
        Ok(per_example.f_sum(Kind::Float)?)
    }
}
