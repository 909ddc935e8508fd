//! The joint phoneme duration and F0 model of Deep Voice §3.3, with the
//! loss of App. B (eq. 27).
//!
//! Input: one-hot phoneme (40) and stress (5) per phoneme. Two fully
//! connected layers of 256 (relu), two unidirectional GRU layers of 128
//! (with `bidirectional`, each layer also runs a second GRU, `gru_rev`,
//! over each utterance's phonemes last to first, and passes both states
//! on), a fully connected output of `2 + f0_points` per phoneme: the duration (in
//! units of [`DURATION_UNIT_S`]), the logit of being voiced, and
//! `f0_points` F0 values (in units of [`F0_UNIT_HZ`]) at the points
//! `(j + 0.5) / f0_points` of the phoneme. Parameter names and shapes are the
//! voice package's (`inference/voice/FORMAT.md`, section `duration`).
//!
//! # Loss (eq. 27) and the λ values
//!
//! Per phoneme: `|t̂ − t| + λ1 · CE(p̂, p) + λ2 · Σ_j m_j |F̂0_j − F0_j| +
//! λ3 · Σ_j |F̂0_{j+1} − F̂0_j|`, averaged over an utterance's phonemes.
//! Units make the terms comparable: durations in 10 ms (a phoneme is ~8
//! units), F0 in 100 Hz (~2 units). `p` is the voiced share of the
//! phoneme's F0 frames (a soft target; CE is binary cross-entropy with
//! logits). The F0 error is counted only at points where the reference is
//! voiced (`m_j`): an unvoiced reference has no F0, and pulling those
//! predictions to zero would distort partly voiced phonemes; the paper's
//! formula leaves this open. λ1 = 1 (voicing errors are as costly as a 10 ms
//! duration error), λ2 = 1 / f0_points (the 20 points together weigh like one
//! duration term: a 10 Hz error everywhere costs 0.1), λ3 = 0.1 / f0_points
//! (a gentle smoothness penalty: a 100 Hz jump between neighbouring points
//! costs 0.005).

use dv_torch::tch;
use dv_torch::tch::nn::{self, Module, RNN};
use dv_torch::tch::{Kind, Tensor};

use super::model::{dropout, sorted_parameters, Batch, Model};
use crate::TrainError;

/// Seconds per unit of the duration output.
pub const DURATION_UNIT_S: f64 = 0.01;
/// Hz per unit of the F0 outputs.
pub const F0_UNIT_HZ: f64 = 100.0;
/// One-hot width: 40 phonemes and 5 stress levels (App. A.3).
pub const DURATION_INPUT: i64 = 45;

// Defined in dv-config with the run config, which parses them without libtorch:
// the voice package's `duration` section plus dropout and the λ.
pub use dv_config::DurationConfig;

pub struct DurationModel {
    pub config: DurationConfig,
    vs: nn::VarStore,
    fc1: nn::Linear,
    fc2: nn::Linear,
    gru: Vec<nn::GRU>,
    /// The reverse direction of each GRU layer, when bidirectional.
    gru_rev: Vec<nn::GRU>,
    out: nn::Linear,
}

impl DurationModel {
    pub fn new(config: &DurationConfig, device: tch::Device) -> Result<DurationModel, TrainError> {
        config.check()?;
        let d = &config.duration;
        let (fc, h) = (d.fc as i64, d.gru as i64);
        let vs = nn::VarStore::new(device);
        let p = vs.root() / "duration";
        let fc1 = nn::linear(&p / "fc1", DURATION_INPUT, fc, Default::default());
        let fc2 = nn::linear(&p / "fc2", fc, fc, Default::default());
        let rnn = nn::RNNConfig { num_layers: 1, batch_first: true, ..Default::default() };
        let width = d.gru_output() as i64;
        let input = |k: usize| if k == 0 { fc } else { width };
        let gru = (0..d.gru_layers).map(|k| nn::gru(&p / "gru" / k, input(k), h, rnn)).collect();
        let layers = if d.bidirectional { d.gru_layers } else { 0 };
        let gru_rev = (0..layers).map(|k| nn::gru(&p / "gru_rev" / k, input(k), h, rnn)).collect();
        let out = nn::linear(&p / "out", width, d.output_dim() as i64, Default::default());
        Ok(DurationModel { config: config.clone(), vs, fc1, fc2, gru, gru_rev, out })
    }

    pub fn var_store(&self) -> &nn::VarStore {
        &self.vs
    }

    /// Raw outputs per phoneme (module docs). `lengths` are the examples'
    /// phoneme counts: the reverse direction starts at each one's last
    /// phoneme, not at the batch's padding.
    ///
    /// # Shapes
    /// `inputs` `[b, P, 45]` → `[b, P, 2 + f0_points]`.
    pub fn forward(
        &self,
        inputs: &Tensor,
        lengths: &[i64],
        train: bool,
        seed: u64,
        ids: &[usize],
    ) -> Result<Tensor, TrainError> {
        let p = self.config.dropout;
        let x = self.fc1.forward(inputs).f_relu()?;
        let x = self.fc2.forward(&x).f_relu()?;
        let mut x = dropout(&x, p, train, seed, 1, ids)?; // [b, P, fc]
        let flip = if self.gru_rev.is_empty() { None } else { Some(reversal(lengths, x.size()[1], x.device())?) };
        for (k, g) in self.gru.iter().enumerate() {
            let forward = g.seq(&x).0; // [b, P, gru]
            x = match (&self.gru_rev.get(k), &flip) {
                (Some(r), Some(flip)) => {
                    let back = reverse_within(&r.seq(&reverse_within(&x, flip)?).0, flip)?;
                    Tensor::f_cat(&[forward, back], 2)? // [b, P, 2 gru]
                }
                _ => forward,
            };
        }
        let x = dropout(&x, p, train, seed, 2, ids)?;
        Ok(self.out.forward(&x))
    }

    /// eq. 27 per phoneme, masked to each example's phonemes and averaged
    /// over them.
    ///
    /// # Shapes
    /// `out` `[b, P, 2 + k]`, `targets` `[b, P, 2 + 2k]`, `lengths` `b` → `[b]`.
    pub fn losses(&self, out: &Tensor, targets: &Tensor, lengths: &[i64]) -> Result<Tensor, TrainError> {
        let k = self.config.duration.f0_points as i64;
        let [l1, l2, l3] = self.config.lambdas;
        let (b, pmax) = (out.size()[0], out.size()[1]);
        let dur = out.f_select(2, 0)?.f_sub(&targets.f_select(2, 0)?)?.f_abs()?; // [b, P]
        let voiced = out.f_select(2, 1)?.f_binary_cross_entropy_with_logits::<Tensor>(
            &targets.f_select(2, 1)?,
            None,
            None,
            tch::Reduction::None,
        )?; // [b, P]
        let f0 = out.f_narrow(2, 2, k)?; // [b, P, k]
        let mask = targets.f_narrow(2, 2 + k, k)?;
        let f0_err =
            f0.f_sub(&targets.f_narrow(2, 2, k)?)?.f_abs()?.f_mul(&mask)?.f_sum_dim_intlist(2, false, Kind::Float)?;
        let smooth = f0.f_narrow(2, 1, k - 1)?.f_sub(&f0.f_narrow(2, 0, k - 1)?)?.f_abs()?.f_sum_dim_intlist(
            2,
            false,
            Kind::Float,
        )?;
        let per =
            dur.f_add(&voiced.f_mul_scalar(l1)?)?.f_add(&f0_err.f_mul_scalar(l2)?)?.f_add(&smooth.f_mul_scalar(l3)?)?; // [b, P]
        let steps = Tensor::f_arange(pmax, (Kind::Int64, out.device()))?.f_view([1, pmax])?;
        let lens = Tensor::from_slice(lengths).f_to_device(out.device())?.f_view([b, 1])?;
        let m = steps.f_lt_tensor(&lens)?.f_to_kind(Kind::Float)?;
        Ok(per
            .f_mul(&m)?
            .f_sum_dim_intlist(1, false, Kind::Float)?
            .f_div(&lens.f_view([b])?.f_to_kind(Kind::Float)?.f_clamp_min(1.0)?)?)
    }
}

impl Model for DurationModel {
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        sorted_parameters(&self.vs)
    }

    /// A [`Batch`] of utterances: `inputs` `[b, P, 45]` one-hots, `targets`
    /// `[b, P, 2 + 2k]` float (duration units, voiced share, F0 units,
    /// F0 mask), `input_lengths` the phoneme counts.
    fn loss_sum(&self, batch: &Batch, train: bool, seed: u64) -> Result<Tensor, TrainError> {
        let out = self.forward(&batch.inputs, &batch.input_lengths, train, seed, &batch.example_ids)?;
        Ok(self.losses(&out, &batch.targets, &batch.input_lengths)?.f_sum(Kind::Float)?)
    }
}

/// For each example of `lengths`, the positions `0..pmax` that read its
/// first `len` steps last to first and leave its padding in place: `[b, P]`.
fn reversal(lengths: &[i64], pmax: i64, device: tch::Device) -> Result<Tensor, TrainError> {
    let mut idx = Vec::with_capacity(lengths.len() * pmax as usize);
    for &len in lengths {
        let len = len.clamp(0, pmax);
        idx.extend((0..pmax).map(|t| if t < len { len - 1 - t } else { t }));
    }
    Ok(Tensor::from_slice(&idx).f_view([lengths.len() as i64, pmax])?.f_to_device(device)?)
}

/// `x` `[b, P, D]` with each example's steps reordered by `flip` `[b, P]`
/// ([`reversal`]; applying it twice restores the order).
fn reverse_within(x: &Tensor, flip: &Tensor) -> Result<Tensor, TrainError> {
    let index = flip.f_unsqueeze(-1)?.f_expand(x.size(), false)?;
    Ok(x.f_gather(1, &index, false)?)
}
