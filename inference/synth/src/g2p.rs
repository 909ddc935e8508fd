//! The grapheme-to-phoneme model (Deep Voice §3.1; FORMAT.md,
//! "Grapheme-to-phoneme model"): bidirectional GRU encoder layers over a
//! word's letters, unidirectional GRU decoder layers over `(phoneme,
//! stress)` tokens whose layer k starts from the final forward state of
//! encoder layer k, decoded by beam search (`beam.rs`). With `attention`
//! (FORMAT.md; not in §3.1) each step also attends over the top encoder
//! layer's outputs ("general" scores, no input feeding).
//!
//! It runs once per word missing from the lexicon, a dozen letters, so it is
//! written for accuracy, not speed: f64 throughout (`gru.rs`).

use dv_voice::{g2p_tensors, G2pConfig, Voice, VoiceError, Weights, MAX_BEAM};

use crate::beam::{Decoder, Search};
use crate::error::SynthError;
use crate::gru::{dot, tensor, Dense, Gru};

/// The G2P model of a voice.
#[derive(Debug, Clone)]
pub struct G2p {
    config: G2pConfig,
    stress_levels: usize,
    enc_embed: Vec<f32>, // [graphemes + 1, E]
    dec_embed: Vec<f32>, // [outputs + 1, E]
    /// Per layer: forward and backward direction.
    enc: Vec<[Gru; 2]>,
    dec: Vec<Gru>,
    out: Dense, // [outputs, H]
    attention: Option<Attention>,
}

/// Attention's weights: `g2p.att.w` `[H, 2H]` and the combine layer `[H, 3H]`.
#[derive(Debug, Clone)]
struct Attention {
    w: Vec<f32>,
    combine: Dense,
}

/// What the encoder hands the decoder for one word.
struct Encoded {
    /// The decoder's initial state: encoder layer k's final forward state, `[L, H]`.
    init: Vec<f64>,
    /// With attention: the top layer's outputs `m_j = [fwd(j); bwd(j)]`, `[n, 2H]`.
    memory: Vec<f64>,
    /// With attention: `k_j = att.w · m_j`, so that a score is `y · k_j`, `[n, H]`.
    keys: Vec<f64>,
}

impl G2p {
    /// Copies the `g2p.*` weights of `voice`; a package without a G2P model
    /// is [`SynthError::NoModel`].
    pub fn new(voice: &Voice) -> Result<Self, SynthError> {
        let c = voice.config();
        let config = c.g2p.clone().ok_or(SynthError::NoModel { what: "g2p" })?;
        Self::from_weights(config, c.stress_levels, voice.weights())
    }

    /// The model of `config` from the `g2p.*` tensors of `weights`, outside
    /// a voice package (a G2P checkpoint converted to the voice format, as
    /// `dv export --g2p` converts it); `stress_levels` as in the voice
    /// config. A tensor missing or of another shape than
    /// [`dv_voice::g2p_tensors`] gives is a [`SynthError::Voice`] error.
    pub fn from_weights(config: G2pConfig, stress_levels: usize, weights: &Weights) -> Result<Self, SynthError> {
        if stress_levels == 0 || config.outputs == 0 || !(config.outputs - 1).is_multiple_of(stress_levels) {
            let reason = format!("{} outputs are not 1 + phonemes × {stress_levels} stress levels", config.outputs);
            return Err(SynthError::InvalidOption { what: "stress_levels", reason });
        }
        for (name, shape) in g2p_tensors(&config) {
            let t = tensor(weights, &name)?;
            if t.shape() != shape.as_slice() {
                let got = t.shape().to_vec();
                return Err(VoiceError::ShapeMismatch { name, expected: shape, got }.into());
            }
        }
        let enc = (0..config.layers)
            .map(|k| {
                Ok([Gru::load(weights, &format!("g2p.enc.{k}.fwd"))?, Gru::load(weights, &format!("g2p.enc.{k}.bwd"))?])
            })
            .collect::<Result<_, SynthError>>()?;
        let dec = (0..config.layers).map(|k| Gru::load(weights, &format!("g2p.dec.{k}"))).collect::<Result<_, _>>()?;
        let attention = if config.attention {
            Some(Attention {
                w: tensor(weights, "g2p.att.w")?.data().to_vec(),
                combine: Dense::load(weights, "g2p.att.combine")?,
            })
        } else {
            None
        };
        Ok(Self {
            stress_levels,
            enc_embed: tensor(weights, "g2p.enc_embed")?.data().to_vec(),
            dec_embed: tensor(weights, "g2p.dec_embed")?.data().to_vec(),
            enc,
            dec,
            out: Dense::load(weights, "g2p.out")?,
            attention,
            config,
        })
    }

    /// The config section the model was built from.
    pub fn config(&self) -> &G2pConfig {
        &self.config
    }

    /// A word's letters as encoder indices (`a` = 1, …, `.` = 29), after
    /// ASCII lower-casing. A character outside `config().graphemes` is
    /// [`SynthError::Grapheme`]; an empty word is
    /// [`SynthError::InvalidOption`].
    pub fn encode_word(&self, word: &str) -> Result<Vec<usize>, SynthError> {
        if word.is_empty() {
            return Err(SynthError::InvalidOption { what: "word", reason: "a word has at least one letter".into() });
        }
        word.chars()
            .map(|c| {
                self.config
                    .grapheme_index(c)
                    .ok_or_else(|| SynthError::Grapheme { word: word.to_string(), character: c })
            })
            .collect()
    }

    /// The word's pronunciation by beam search of `width` (the config's
    /// `beam` is the trained width): `(phoneme, stress)` pairs
    /// (`dv_text::Phoneme::index`, `dv_text::Stress::index`) and the summed
    /// log-probability of the tokens and EOS (of the tokens only when no
    /// hypothesis ended within `2 · letters + 8` steps). Width 1 is
    /// [`G2p::greedy`]. A width outside `1..=MAX_BEAM` is
    /// [`SynthError::InvalidOption`]. Allocates.
    pub fn beam(&self, word: &str, width: usize) -> Result<(Vec<(usize, usize)>, f32), SynthError> {
        let letters = self.encode_word(word)?;
        let (tokens, score) = self.beam_letters(&letters, width)?;
        Ok((self.pairs(&tokens), score as f32))
    }

    /// Greedy decoding: the most probable token each step (the lowest index
    /// on ties); otherwise as [`G2p::beam`]. Allocates.
    pub fn greedy(&self, word: &str) -> Result<(Vec<(usize, usize)>, f32), SynthError> {
        let letters = self.encode_word(word)?;
        let enc = self.encode(&letters);
        let (tokens, score) = self.search(&letters, 1).greedy(&mut Step::new(self, &enc), enc.init.clone());
        Ok((self.pairs(&tokens), score as f32))
    }

    /// Teacher-forced next-token log-probabilities: row i is the
    /// distribution after BOS and `tokens[..i]`.
    ///
    /// # Shapes
    /// * `tokens`: T output tokens, each in `1..outputs` (no EOS)
    /// * returns `[T + 1, outputs]` row-major
    ///
    /// A token out of range is [`SynthError::OutOfRange`]. Allocates.
    pub fn log_probs(&self, word: &str, tokens: &[usize]) -> Result<Vec<f32>, SynthError> {
        let letters = self.encode_word(word)?;
        let o = self.config.outputs;
        for (position, &t) in tokens.iter().enumerate() {
            if t == 0 || t >= o {
                return Err(SynthError::OutOfRange { what: "g2p token", position, value: t, limit: o });
            }
        }
        let enc = self.encode(&letters);
        let mut state = enc.init.clone();
        let mut step = Step::new(self, &enc);
        let mut lp = vec![0.0f64; o];
        let mut out = Vec::with_capacity((tokens.len() + 1) * o); // [T + 1, outputs]
        for &t in std::iter::once(&self.config.bos()).chain(tokens) {
            step.advance(&mut state, t, &mut lp);
            out.extend(lp.iter().map(|&v| v as f32));
        }
        Ok(out)
    }

    /// Decodes every word of the package's G2P golden data at the config's
    /// beam width and returns how many words' tokens differ from the
    /// trainer's, or `None` when the package has no G2P golden data.
    /// `voice` is the package this model was built from.
    pub fn golden_parity(&self, voice: &Voice) -> Result<Option<usize>, SynthError> {
        let Some(golden) = voice.golden().and_then(|g| g.g2p.as_ref()) else { return Ok(None) };
        let mut differ = 0;
        for word in golden.decode(voice.config())? {
            let (got, _) = self.beam_letters(&word.letters, self.config.beam)?;
            differ += usize::from(got != word.tokens);
        }
        Ok(Some(differ))
    }

    /// Beam search over encoder indices; tokens without EOS and the score.
    fn beam_letters(&self, letters: &[usize], width: usize) -> Result<(Vec<usize>, f64), SynthError> {
        if width == 0 || width > MAX_BEAM {
            return Err(SynthError::InvalidOption {
                what: "beam width",
                reason: format!("{width} is outside 1..={MAX_BEAM}"),
            });
        }
        let enc = self.encode(letters);
        Ok(self.search(letters, width).run(&mut Step::new(self, &enc), enc.init.clone()))
    }

    fn search(&self, letters: &[usize], width: usize) -> Search {
        Search {
            width,
            max_steps: 2 * letters.len() + 8,
            outputs: self.config.outputs,
            bos: self.config.bos(),
            eos: dv_voice::G2P_EOS,
        }
    }

    /// `(phoneme, stress)` of each token `1 + phoneme · stress_levels + stress`.
    fn pairs(&self, tokens: &[usize]) -> Vec<(usize, usize)> {
        let s = self.stress_levels.max(1);
        tokens.iter().map(|&t| ((t - 1) / s, (t - 1) % s)).collect()
    }

    /// The encoder: the decoder's initial state (encoder layer k's forward
    /// state after the last letter, per layer) and, with attention, the
    /// memory and its keys.
    ///
    /// # Shapes
    /// * `letters`: n ≥ 1 indices in `1..graphemes + 1` (checked by
    ///   [`G2p::encode_word`] or the golden data's decoding)
    /// * `init` `[L, H]`, `memory` `[n, 2H]`, `keys` `[n, H]`, row-major
    fn encode(&self, letters: &[usize]) -> Encoded {
        let (e, h, n) = (self.config.embed, self.config.hidden, letters.len());
        // [n, in_k]: the embeddings, then [fwd; bwd] of the layer below.
        let mut xs: Vec<Vec<f64>> =
            letters.iter().map(|&l| self.enc_embed[l * e..(l + 1) * e].iter().map(|&v| v as f64).collect()).collect();
        let (mut gi, mut gh) = (vec![0.0f64; 3 * h], vec![0.0f64; 3 * h]);
        let mut init = Vec::with_capacity(self.enc.len() * h); // [L, H]
        for (k, [fwd, bwd]) in self.enc.iter().enumerate() {
            let mut hv = vec![0.0f64; h];
            let mut next = vec![vec![0.0f64; 2 * h]; n]; // [n, 2H]
            for t in 0..n {
                fwd.step(&xs[t], &mut hv, &mut gi, &mut gh);
                next[t][..h].copy_from_slice(&hv);
            }
            init.extend_from_slice(&hv);
            if k + 1 == self.enc.len() && self.attention.is_none() {
                break; // the last layer's outputs feed nothing
            }
            hv.fill(0.0);
            for t in (0..n).rev() {
                bwd.step(&xs[t], &mut hv, &mut gi, &mut gh);
                next[t][h..].copy_from_slice(&hv);
            }
            xs = next;
        }
        let Some(att) = &self.attention else { return Encoded { init, memory: Vec::new(), keys: Vec::new() } };
        let memory: Vec<f64> = xs.concat(); // the top layer's outputs
        let mut keys = vec![0.0f64; n * h];
        for (m, k) in memory.chunks_exact(2 * h).zip(keys.chunks_exact_mut(h)) {
            for (a, kv) in k.iter_mut().enumerate() {
                *kv = dot(&att.w[a * 2 * h..(a + 1) * 2 * h], m);
            }
        }
        Encoded { init, memory, keys }
    }
}

/// The decoder with its scratch, as the beam search drives it; the state is
/// every layer's hidden vector, `[L, H]`.
struct Step<'a> {
    model: &'a G2p,
    enc: &'a Encoded,
    x: Vec<f64>,       // [E]
    gi: Vec<f64>,      // [3H]
    gh: Vec<f64>,      // [3H]
    logits: Vec<f64>,  // [outputs]
    scores: Vec<f64>,  // [n], attention only
    joined: Vec<f64>,  // [y; c] [3H], attention only
    att_out: Vec<f64>, // ỹ [H], attention only
}

impl<'a> Step<'a> {
    fn new(model: &'a G2p, enc: &'a Encoded) -> Self {
        let (e, h) = (model.config.embed, model.config.hidden);
        let n = enc.keys.len() / h;
        let att = |len: usize| if model.attention.is_some() { vec![0.0; len] } else { Vec::new() };
        Self {
            model,
            enc,
            x: vec![0.0; e],
            gi: vec![0.0; 3 * h],
            gh: vec![0.0; 3 * h],
            logits: vec![0.0; model.out.rows()],
            scores: att(n),
            joined: att(3 * h),
            att_out: att(h),
        }
    }

    /// ỹ = tanh(combine · [y; c]) with c the attention context of y (FORMAT.md).
    fn attend(&mut self, att: &Attention, y: &[f64]) {
        let h = y.len();
        for (s, k) in self.scores.iter_mut().zip(self.enc.keys.chunks_exact(h)) {
            *s = y.iter().zip(k).map(|(a, b)| a * b).sum();
        }
        let max = self.scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut total = 0.0;
        for s in &mut self.scores {
            *s = (*s - max).exp();
            total += *s;
        }
        self.joined[..h].copy_from_slice(y);
        let c = &mut self.joined[h..];
        c.fill(0.0);
        for (&a, m) in self.scores.iter().zip(self.enc.memory.chunks_exact(2 * h)) {
            for (cv, &mv) in c.iter_mut().zip(m) {
                *cv += a / total * mv;
            }
        }
        att.combine.apply(&self.joined, &mut self.att_out);
        for v in &mut self.att_out {
            *v = v.tanh();
        }
    }
}

impl Decoder for Step<'_> {
    type State = Vec<f64>;

    /// Embeds `token`, runs the L stacked cells (each layer's input is the
    /// new state of the layer below) and writes `log_softmax(out · h_top +
    /// b)` (`h_top` through attention when the model has it).
    fn advance(&mut self, state: &mut Vec<f64>, token: usize, lp: &mut [f64]) {
        let m = self.model;
        let (e, h) = (m.config.embed, m.config.hidden);
        for (x, &w) in self.x.iter_mut().zip(&m.dec_embed[token * e..(token + 1) * e]) {
            *x = w as f64;
        }
        for (k, gru) in m.dec.iter().enumerate() {
            let (below, rest) = state.split_at_mut(k * h);
            let input: &[f64] = if k == 0 { &self.x } else { &below[(k - 1) * h..] };
            gru.step(input, &mut rest[..h], &mut self.gi, &mut self.gh);
        }
        let top = &state[state.len() - h..];
        match &m.attention {
            Some(att) => {
                self.attend(att, top);
                m.out.apply(&self.att_out, &mut self.logits);
            }
            None => m.out.apply(top, &mut self.logits),
        }
        let max = self.logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = max + self.logits.iter().map(|&v| (v - max).exp()).sum::<f64>().ln();
        for (p, &v) in lp.iter_mut().zip(&self.logits) {
            *p = v - lse;
        }
    }
}
