//! The grapheme-to-phoneme model of Deep Voice §3.1: an encoder of
//! bidirectional GRU layers over the letters, a decoder of unidirectional
//! GRU layers over the phonemes (with stress) whose layer k starts from the
//! final state of encoder layer k's forward direction, trained with teacher
//! forcing and decoded by beam search (width 5). Vocabularies, parameter
//! names and the beam rule are the voice package's
//! (`inference/voice/FORMAT.md`, section `g2p`), so `dv-synth` reproduces
//! this model's decoding without libtorch.
//!
//! Dropout: §3.1 writes "dropout with probability 0.95 after each recurrent
//! layer", read as a keep probability (as for the other models): drop 0.05.
//!
//! Attention (`attention = true`, off in every preset): an extension beyond
//! §3.1, the attention G2P systems since the paper use (Luong et al. 2015,
//! "general" scores, no input feeding, so teacher forcing still runs each
//! GRU over the whole sequence at once): the top decoder layer's output `y`
//! scores every encoder output `e` (top bidirectional layer) as
//! `y W_a eᵀ`, padding masked; the softmax-weighted context `c` and `y` give
//! `tanh(W_c [y; c] + b_c)`, which the output layer reads instead of `y`.
//! The voice package carries it (`inference/voice/FORMAT.md`, `g2p.att.*`)
//! and `dv-synth`'s libtorch-free G2P runs it.

use dv_torch::tch;
use dv_torch::tch::nn::{self, RNN};
use dv_torch::tch::{Kind, Reduction, Tensor};

use super::model::{dropout, sorted_parameters, Batch, Model};
use crate::TrainError;

/// Letters the encoder reads, at indices 1..=29 (0 pads).
pub const GRAPHEMES: &str = "abcdefghijklmnopqrstuvwxyz'-.";
/// Output classes: end of word (0) and `1 + phoneme · 5 + stress`.
pub const G2P_OUTPUTS: i64 = 1 + 40 * 5;
/// End of word.
pub const EOS: i64 = 0;
/// The decoder's start token (an input only).
pub const BOS: i64 = G2P_OUTPUTS;

// Defined in dv-config with the run config, which parses them without libtorch:
// the voice package's `g2p` section plus dropout and label smoothing.
pub use dv_config::G2pConfig;

/// A word's letters as encoder indices, or the first letter outside
/// [`GRAPHEMES`].
pub fn encode_word(word: &str) -> Result<Vec<i64>, char> {
    word.chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            GRAPHEMES.find(c).map(|i| i as i64 + 1).ok_or(c)
        })
        .collect()
}

/// The output token of a phoneme and stress index.
pub fn token(phoneme: usize, stress: usize) -> i64 {
    1 + phoneme as i64 * 5 + stress as i64
}

/// The (phoneme, stress) of an output token other than EOS: [`token`]'s inverse.
pub fn untoken(t: i64) -> (usize, usize) {
    (((t - 1) / 5) as usize, ((t - 1) % 5) as usize)
}

pub struct G2p {
    pub config: G2pConfig,
    vs: nn::VarStore,
    enc_embed: Tensor,
    dec_embed: Tensor,
    enc: Vec<(nn::GRU, nn::GRU)>,
    dec: Vec<nn::GRU>,
    out: nn::Linear,
    /// `W_a` `[H, 2H]` and `W_c` (`3H → H`), when `attention` is on.
    attention: Option<(Tensor, nn::Linear)>,
}

/// What the encoder gives the decoder.
pub struct Encoded {
    /// The decoder's initial states: encoder layer k's forward final state,
    /// `L × [1, b, H]`.
    pub states: Vec<Tensor>,
    /// The top layer's outputs `[b, n, 2H]`, which attention reads.
    pub memory: Tensor,
    /// Which letters are real (not padding), `[b, 1, n]` bool.
    pub valid: Tensor,
}

impl G2p {
    pub fn new(config: &G2pConfig, device: tch::Device) -> Result<G2p, TrainError> {
        config.check()?;
        let g = &config.g2p;
        let (embed, hidden) = (g.embed as i64, g.hidden as i64);
        let vs = nn::VarStore::new(device);
        let p = vs.root() / "g2p";
        let init = nn::Init::Randn { mean: 0.0, stdev: 0.1 };
        let enc_embed = p.var("enc_embed", &[GRAPHEMES.len() as i64 + 1, embed], init);
        let dec_embed = p.var("dec_embed", &[G2P_OUTPUTS + 1, embed], init);
        let rnn = nn::RNNConfig { num_layers: 1, batch_first: true, ..Default::default() };
        let enc = (0..g.layers)
            .map(|k| {
                let input = if k == 0 { embed } else { 2 * hidden };
                let q = &p / "enc" / k;
                (nn::gru(&q / "fwd", input, hidden, rnn), nn::gru(&q / "bwd", input, hidden, rnn))
            })
            .collect();
        let dec =
            (0..g.layers).map(|k| nn::gru(&p / "dec" / k, if k == 0 { embed } else { hidden }, hidden, rnn)).collect();
        let out = nn::linear(&p / "out", hidden, G2P_OUTPUTS, Default::default());
        let attention = g.attention.then(|| {
            let a = &p / "att";
            let w =
                a.var("w", &[hidden, 2 * hidden], nn::Init::Randn { mean: 0.0, stdev: 0.1 / (hidden as f64).sqrt() });
            (w, nn::linear(&a / "combine", 3 * hidden, hidden, Default::default()))
        });
        Ok(G2p { config: config.clone(), vs, enc_embed, dec_embed, enc, dec, out, attention })
    }

    pub fn var_store(&self) -> &nn::VarStore {
        &self.vs
    }

    /// The encoder: the decoder's initial states (encoder layer k's forward
    /// final state at each word's last letter) and the top layer's outputs.
    ///
    /// # Shapes
    /// `letters` `[b, n]` int64 (0-padded), `lengths` `b` → [`Encoded`].
    pub fn encode(
        &self,
        letters: &Tensor,
        lengths: &[i64],
        train: bool,
        seed: u64,
        ids: &[usize],
    ) -> Result<Encoded, TrainError> {
        let (b, n) = (letters.size()[0], letters.size()[1]);
        let mut x = Tensor::f_embedding(&self.enc_embed, letters, 0, false, false)?; // [b, n, E]
        let mut states = Vec::with_capacity(self.enc.len());
        let last =
            Tensor::from_slice(&lengths.iter().map(|l| l - 1).collect::<Vec<_>>()).f_to_device(letters.device())?;
        for (k, (f, bw)) in self.enc.iter().enumerate() {
            let fo = f.seq(&x).0; // [b, n, H]
            let h = self.config.g2p.hidden as i64;
            let idx = last.f_view([b, 1, 1])?.f_expand([b, 1, h], false)?;
            states.push(fo.f_gather(1, &idx, false)?.f_view([1, b, h])?); // state after the last real letter
            let bo = bw.seq(&reverse_within(&x, lengths)?).0;
            let bo = reverse_within(&bo, lengths)?; // [b, n, H]
            x = Tensor::f_cat(&[fo, bo], 2)?; // [b, n, 2H]
            x = dropout(&x, self.config.dropout, train, seed, 10 + k as u64, ids)?;
        }
        let steps = Tensor::f_arange(n, (tch::Kind::Int64, letters.device()))?.f_view([1, 1, n])?;
        let lens = Tensor::from_slice(lengths).f_to_device(letters.device())?.f_view([b, 1, 1])?;
        Ok(Encoded { states, memory: x, valid: steps.f_lt_tensor(&lens)? })
    }

    /// One decoder pass with teacher forcing or one step at a time;
    /// `encoded` gives attention its memory (unused without attention).
    ///
    /// # Shapes
    /// `inputs` `[b, T]` int64 decoder input tokens, `states` `L × [1, b, H]`
    /// → logits `[b, T, 201]` and the new states.
    pub fn decode(
        &self,
        inputs: &Tensor,
        states: &[Tensor],
        encoded: &Encoded,
        train: bool,
        seed: u64,
        ids: &[usize],
    ) -> Result<(Tensor, Vec<Tensor>), TrainError> {
        let mut x = Tensor::f_embedding(&self.dec_embed, inputs, -1, false, false)?; // [b, T, E]
        let mut out_states = Vec::with_capacity(self.dec.len());
        for (k, (g, s)) in self.dec.iter().zip(states).enumerate() {
            let (y, st) = g.seq_init(&x, &nn::GRUState(s.shallow_clone()));
            out_states.push(st.0);
            x = dropout(&y, self.config.dropout, train, seed, 20 + k as u64, ids)?;
            // [b, T, H]
        }
        if let Some((w_a, combine)) = &self.attention {
            let (e, valid) = (&encoded.memory, &encoded.valid); // [b, n, 2H], [b, 1, n]
            let scores = x.f_matmul(w_a)?.f_bmm(&e.f_transpose(1, 2)?)?; // [b, T, n]
            let weights =
                scores.f_masked_fill(&valid.f_logical_not()?, f64::NEG_INFINITY)?.f_softmax(-1, Kind::Float)?;
            let context = weights.f_bmm(e)?; // [b, T, 2H]
            let joined = nn::Module::forward(combine, &Tensor::f_cat(&[&x, &context], 2)?).f_tanh()?; // [b, T, H]
            x = dropout(&joined, self.config.dropout, train, seed, 30, ids)?;
        }
        Ok((nn::Module::forward(&self.out, &x), out_states))
    }

    /// Beam search of §3.1 with the voice package's rule (FORMAT.md):
    /// scores are summed log-probabilities, a hypothesis ending in EOS is
    /// finished, the `width` best live hypotheses go on, and the search stops
    /// when the best finished score beats every live one or after
    /// `2n + 8` steps. Width 1 is greedy decoding. Returns the tokens
    /// (without EOS) and the score. [`beam_ensemble`] with this model alone.
    pub fn beam(&self, letters: &[i64], width: usize) -> Result<(Vec<i64>, f64), TrainError> {
        beam_ensemble(&[self], letters, width)
    }
}

/// Beam search over an ensemble: the rule of [`G2p::beam`], with each step's
/// log-probabilities the mean of the models' (Sutskever et al. 2014; the
/// models must share the vocabulary, which every [`G2p`] does). All live
/// hypotheses of a step go through each model's decoder as one batch.
pub fn beam_ensemble(models: &[&G2p], letters: &[i64], width: usize) -> Result<(Vec<i64>, f64), TrainError> {
    let mut all = beam_ensemble_nbest(models, letters, width, 1)?;
    Ok(if all.is_empty() { (vec![], f64::NEG_INFINITY) } else { all.swap_remove(0) })
}

/// [`beam_ensemble`]'s finished hypotheses, best first (the earliest on
/// ties), or its best live one when none finished: the n-best list that
/// [`rescore`] reorders. The search goes on until `min_finished` hypotheses
/// have finished (or its step limit); 1 is [`beam_ensemble`]'s rule. Going on
/// never changes the first: a live hypothesis's score only falls as it grows.
pub fn beam_ensemble_nbest(
    models: &[&G2p],
    letters: &[i64],
    width: usize,
    min_finished: usize,
) -> Result<Vec<(Vec<i64>, f64)>, TrainError> {
    if letters.is_empty() || width == 0 || models.is_empty() {
        return Err(TrainError::Shape {
            what: "g2p beam search",
            expected: "a word of ≥ 1 letter, width ≥ 1, ≥ 1 model".into(),
            got: format!("{} letters, width {width}, {} models", letters.len(), models.len()),
        });
    }
    let n = letters.len() as i64;
    // Per model: the encoder's output and the live hypotheses' states per layer [1, k, H].
    let mut encoded = Vec::with_capacity(models.len());
    let mut states = Vec::with_capacity(models.len());
    for m in models {
        let x = Tensor::from_slice(letters).f_view([1, n])?.f_to_device(m.vs.device())?;
        let e = tch::no_grad(|| m.encode(&x, &[n], false, 0, &[0]))?;
        states.push(e.states.iter().map(|t| t.shallow_clone()).collect::<Vec<_>>());
        encoded.push(e);
    }
    let mut live: Vec<(Vec<i64>, f64)> = vec![(vec![], 0.0)];
    let mut finished: Vec<(Vec<i64>, f64)> = Vec::new();
    let classes = G2P_OUTPUTS as usize;
    for _ in 0..(2 * n + 8) {
        if live.is_empty() {
            break;
        }
        let k = live.len() as i64;
        let prev: Vec<i64> = live.iter().map(|(t, _)| *t.last().unwrap_or(&BOS)).collect();
        // Mean log-probabilities [k · 201] (summed where the models are, one
        // copy to the host per step) and each model's new states.
        let mut sum: Option<Tensor> = None;
        let mut new_states = Vec::with_capacity(models.len());
        for ((m, e), st) in models.iter().zip(&encoded).zip(&states) {
            let device = m.vs.device();
            let inp = Tensor::from_slice(&prev).f_view([k, 1])?.f_to_device(device)?;
            let batch = Encoded {
                states: vec![],
                memory: e.memory.f_expand([k, -1, -1], false)?,
                valid: e.valid.f_expand([k, -1, -1], false)?,
            };
            let (logits, ns) = tch::no_grad(|| m.decode(&inp, st, &batch, false, 0, &[0]))?;
            let lp = logits.f_log_softmax(-1, Kind::Float)?.f_to_kind(Kind::Double)?.f_view([-1])?;
            sum = Some(match sum {
                None => lp,
                Some(s) => s.f_add(&lp.f_to_device(s.device())?)?,
            });
            new_states.push(ns);
        }
        let total = sum
            .ok_or_else(|| TrainError::Shape {
                what: "g2p beam search",
                expected: "≥ 1 model".into(),
                got: "0".into(),
            })?
            .f_to_device(tch::Device::Cpu)?;
        let lp: Vec<f64> = Vec::<f64>::try_from(total)?.into_iter().map(|x| x / models.len() as f64).collect();
        let mut cands: Vec<(usize, i64, f64)> = Vec::with_capacity(lp.len());
        for (h, (_, score)) in live.iter().enumerate() {
            for t in 0..classes {
                cands.push((h, t as i64, score + lp[h * classes + t]));
            }
        }
        // Best first; ties by hypothesis then token index, so width 1 is argmax with the lowest index.
        cands.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
        let mut next = Vec::with_capacity(width);
        let mut from = Vec::with_capacity(width);
        for (h, t, s) in cands {
            if next.len() == width {
                break;
            }
            if t == EOS {
                finished.push((live[h].0.clone(), s));
            } else {
                let mut toks = live[h].0.clone();
                toks.push(t);
                next.push((toks, s));
                from.push(h as i64);
            }
        }
        if !from.is_empty() {
            states = new_states
                .iter()
                .zip(models)
                .map(|(ns, m)| {
                    let idx = Tensor::from_slice(&from).f_to_device(m.vs.device())?;
                    ns.iter().map(|s| s.f_index_select(1, &idx)).collect::<Result<Vec<_>, _>>()
                })
                .collect::<Result<Vec<_>, _>>()?;
        }
        live = next;
        let best_finished = finished.iter().map(|f| f.1).fold(f64::NEG_INFINITY, f64::max);
        let best_live = live.iter().map(|l| l.1).fold(f64::NEG_INFINITY, f64::max);
        if best_finished >= best_live && finished.len() >= min_finished {
            break;
        }
    }
    // Finished hypotheses best first, the earliest on ties (a stable sort);
    // the best live one only when none finished.
    if finished.is_empty() {
        let pick = live.into_iter().reduce(|a, b| if b.1 > a.1 { b } else { a });
        return Ok(pick.into_iter().collect());
    }
    finished.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(finished)
}

/// Summed log-probability of `tokens` then EOS given `letters` under each
/// model (teacher-forced), averaged over the models.
pub fn sequence_score(models: &[&G2p], letters: &[i64], tokens: &[i64]) -> Result<f64, TrainError> {
    Ok(sequence_scores(models, letters, &[tokens.to_vec()])?[0])
}

/// [`sequence_score`] of several token sequences for the same word: one
/// encoder pass and one batched decoder pass per model.
pub fn sequence_scores(models: &[&G2p], letters: &[i64], seqs: &[Vec<i64>]) -> Result<Vec<f64>, TrainError> {
    let (n, k) = (letters.len() as i64, seqs.len() as i64);
    let t = seqs.iter().map(Vec::len).max().unwrap_or(0) + 1;
    // Decoder inputs BOS, tokens (EOS-padded); targets tokens, EOS, then −1 (not scored).
    let (mut inp, mut tgt) = (vec![EOS; seqs.len() * t], vec![-1i64; seqs.len() * t]);
    for (j, s) in seqs.iter().enumerate() {
        inp[j * t] = BOS;
        inp[j * t + 1..j * t + 1 + s.len()].copy_from_slice(s);
        tgt[j * t..j * t + s.len()].copy_from_slice(s);
        tgt[j * t + s.len()] = EOS;
    }
    let mut total = vec![0f64; seqs.len()];
    for m in models {
        let device = m.vs.device();
        let x = Tensor::from_slice(letters).f_view([1, n])?.f_to_device(device)?;
        let inp = Tensor::from_slice(&inp).f_view([k, t as i64])?.f_to_device(device)?;
        let tgt = Tensor::from_slice(&tgt).f_view([k, t as i64, 1])?.f_to_device(device)?;
        let lp = tch::no_grad(|| -> Result<Vec<f64>, TrainError> {
            let e = m.encode(&x, &[n], false, 0, &[0])?;
            let batch = Encoded {
                states: e
                    .states
                    .iter()
                    .map(|s| s.f_expand([1, k, -1], false)?.f_contiguous())
                    .collect::<Result<_, _>>()?,
                memory: e.memory.f_expand([k, -1, -1], false)?,
                valid: e.valid.f_expand([k, -1, -1], false)?,
            };
            let (logits, _) = m.decode(&inp, &batch.states, &batch, false, 0, &[0])?;
            let scored = tgt.f_ge(0)?;
            let picked = logits.f_log_softmax(-1, Kind::Float)?.f_gather(2, &tgt.f_clamp_min(0)?, false)?;
            let sums =
                picked.f_where_scalarother(&scored, 0.0)?.f_sum_dim_intlist(&[1i64, 2][..], false, Kind::Double)?;
            Ok(Vec::<f64>::try_from(sums.f_to_device(tch::Device::Cpu)?)?)
        })?;
        for (a, b) in total.iter_mut().zip(lp) {
            *a += b / models.len() as f64;
        }
    }
    Ok(total)
}

/// The hypothesis of `nbest` (a left-to-right ensemble's n-best list) with
/// the highest sum of its own score and `weight` times the right-to-left
/// models' score of it reversed; returns it with that sum.
pub fn rescore(
    nbest: &[(Vec<i64>, f64)],
    right_to_left: &[&G2p],
    letters: &[i64],
    weight: f64,
) -> Result<(Vec<i64>, f64), TrainError> {
    Ok(rescore_weights(nbest, right_to_left, letters, &[weight])?.swap_remove(0))
}

/// [`rescore`] for each of `weights`, from one right-to-left scoring of the
/// list: the winner per weight, in the order of `weights`.
pub fn rescore_weights(
    nbest: &[(Vec<i64>, f64)],
    right_to_left: &[&G2p],
    letters: &[i64],
    weights: &[f64],
) -> Result<Vec<(Vec<i64>, f64)>, TrainError> {
    if nbest.is_empty() || weights.is_empty() {
        return Err(TrainError::Shape {
            what: "g2p rescoring",
            expected: "≥ 1 hypothesis and ≥ 1 weight".into(),
            got: format!("{} hypotheses, {} weights", nbest.len(), weights.len()),
        });
    }
    let revs: Vec<Vec<i64>> = nbest.iter().map(|(t, _)| t.iter().rev().copied().collect()).collect();
    let r2l = sequence_scores(right_to_left, letters, &revs)?;
    Ok(weights
        .iter()
        .map(|w| {
            // The first on ties: the n-best list's own order.
            let (i, s) = nbest
                .iter()
                .zip(&r2l)
                .map(|((_, s), r)| s + w * r)
                .enumerate()
                .fold((0, f64::NEG_INFINITY), |best, (i, s)| if s > best.1 { (i, s) } else { best });
            (nbest[i].0.clone(), s)
        })
        .collect())
}

/// Reverses each sequence within its length (padding stays in place).
fn reverse_within(x: &Tensor, lengths: &[i64]) -> Result<Tensor, TrainError> {
    let (b, t, f) = (x.size()[0], x.size()[1], x.size()[2]);
    let steps = Tensor::f_arange(t, (Kind::Int64, x.device()))?.f_view([1, t])?;
    let lens = Tensor::from_slice(lengths).f_to_device(x.device())?.f_view([-1, 1])?;
    let rev = lens.f_sub_scalar(1)?.f_sub(&steps)?;
    let idx = rev.f_where_self(&steps.f_lt_tensor(&lens)?, &steps.f_expand([b, t], false)?)?;
    Ok(x.f_gather(1, &idx.f_unsqueeze(-1)?.f_expand([b, t, f], false)?, false)?)
}

impl Model for G2p {
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        sorted_parameters(&self.vs)
    }

    /// A [`Batch`] of words: `inputs` `[b, n]` letter indices (int64,
    /// 0-padded), `input_lengths` letters per word, `targets` `[b, T + 1]`
    /// output tokens ending in EOS, −100 after it, `target_lengths` tokens
    /// including EOS. Each word's loss is its mean token cross-entropy.
    fn loss_sum(&self, batch: &Batch, train: bool, seed: u64) -> Result<Tensor, TrainError> {
        let ids = &batch.example_ids;
        let encoded = self.encode(&batch.inputs, &batch.input_lengths, train, seed, ids)?;
        let (b, t1) = (batch.targets.size()[0], batch.targets.size()[1]);
        // Decoder inputs: BOS, then the targets shifted right (padding → EOS, never scored).
        let bos = Tensor::f_full([b, 1], BOS, (Kind::Int64, batch.targets.device()))?;
        let shifted = batch.targets.f_narrow(1, 0, t1 - 1)?.f_clamp_min(0)?;
        let inputs = Tensor::f_cat(&[bos, shifted], 1)?; // [b, T + 1]
        let (logits, _) = self.decode(&inputs, &encoded.states, &encoded, train, seed, ids)?; // [b, T + 1, 201]
        let ce = logits
            .f_reshape([b * t1, G2P_OUTPUTS])?
            .f_cross_entropy_loss::<Tensor>(
                &batch.targets.f_reshape([b * t1])?,
                None,
                Reduction::None,
                -100,
                if train { self.config.label_smoothing } else { 0.0 },
            )?
            .f_view([b, t1])?;
        let lens = Tensor::from_slice(&batch.target_lengths).f_to_device(ce.device())?.f_to_kind(Kind::Float)?;
        Ok(ce.f_sum_dim_intlist(1, false, Kind::Float)?.f_div(&lens)?.f_sum(Kind::Float)?)
    }
}
