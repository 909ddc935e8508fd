//! The duration and F0 model (Deep Voice §3.3, App. B; FORMAT.md, "Duration
//! and F0 model"): per phoneme, two ReLU layers, GRU layers (first to last,
//! and last to first too when `bidirectional`) with PyTorch's gate order
//! and equations, and a linear output
//! `[duration; voiced logit; F0 × f0_points]`.
//!
//! It runs once per utterance over a few dozen phonemes, so it is written
//! for accuracy, not speed: every dot product, gate and hidden state is f64
//! (`gru.rs`), and the outputs are rounded to f32 once at the end.

use dv_voice::{DurationConfig, Voice};

use crate::error::SynthError;
use crate::gru::{sigmoid, Dense, Gru};

/// What the model predicts for one phoneme, in physical units.
#[derive(Debug, Clone, PartialEq)]
pub struct Prosody {
    /// `max(o[0], 0) · duration_unit_s`, seconds.
    pub duration_s: f64,
    /// `σ(o[1])`, the probability that the phoneme is voiced.
    pub voiced_p: f32,
    /// `o[2 + j] · f0_unit_hz` at `(j + 0.5) / f0_points` of the phoneme's
    /// duration, Hz (`[f0_points]`). Meaningful where the phoneme is voiced.
    pub f0_hz: Vec<f32>,
}

impl Prosody {
    /// `voiced_p > 0.5`.
    pub fn voiced(&self) -> bool {
        self.voiced_p > 0.5
    }
}

/// The duration and F0 model of a voice.
#[derive(Debug, Clone)]
pub struct DurationModel {
    config: DurationConfig,
    phonemes: usize,
    stress_levels: usize,
    fc1: Dense,
    fc2: Dense,
    grus: Vec<Gru>,
    /// The reverse direction of each layer, when bidirectional.
    reverse: Vec<Gru>,
    out: Dense,
}

impl DurationModel {
    /// Copies the `duration.*` weights of `voice`; a package without a
    /// duration model is [`SynthError::NoModel`].
    pub fn new(voice: &Voice) -> Result<Self, SynthError> {
        let c = voice.config();
        let config = c.duration.ok_or(SynthError::NoModel { what: "duration" })?;
        let grus = (0..config.gru_layers)
            .map(|k| Gru::load(voice.weights(), &format!("duration.gru.{k}")))
            .collect::<Result<_, _>>()?;
        let layers = if config.bidirectional { config.gru_layers } else { 0 };
        let reverse = (0..layers)
            .map(|k| Gru::load(voice.weights(), &format!("duration.gru_rev.{k}")))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            config,
            phonemes: c.phonemes.len(),
            stress_levels: c.stress_levels,
            fc1: Dense::load(voice.weights(), "duration.fc1")?,
            fc2: Dense::load(voice.weights(), "duration.fc2")?,
            grus,
            reverse,
            out: Dense::load(voice.weights(), "duration.out")?,
        })
    }

    /// The config section the model was built from.
    pub fn config(&self) -> &DurationConfig {
        &self.config
    }

    /// Whether the model was trained with stress. When `false`, callers
    /// must pass stress 0 (`Stress::None`) for every phoneme.
    pub fn uses_stress(&self) -> bool {
        self.config.stress
    }

    /// Width of one output row: `2 + f0_points`.
    pub fn output_dim(&self) -> usize {
        self.config.output_dim()
    }

    /// The raw outputs `o` for a phoneme sequence, one row per phoneme:
    /// `o[0]` duration in `duration_unit_s` units (unclamped), `o[1]` the
    /// voiced logit, `o[2..]` F0 in `f0_unit_hz` units.
    ///
    /// # Shapes
    /// * `inputs`: P pairs `(phoneme, stress)` with `phoneme <
    ///   phonemes.len()` (`dv_text::Phoneme::index`) and `stress <
    ///   stress_levels` (`dv_text::Stress::index`); P = 0 gives no rows
    /// * returns `[P, 2 + f0_points]` row-major
    ///
    /// An index out of range is [`SynthError::OutOfRange`]. Allocates.
    pub fn forward(&self, inputs: &[(usize, usize)]) -> Result<Vec<f32>, SynthError> {
        for (position, &(p, s)) in inputs.iter().enumerate() {
            if p >= self.phonemes {
                return Err(SynthError::OutOfRange { what: "phoneme", position, value: p, limit: self.phonemes });
            }
            if s >= self.stress_levels {
                return Err(SynthError::OutOfRange { what: "stress", position, value: s, limit: self.stress_levels });
            }
        }
        let (fc, h, od) = (self.config.fc, self.config.gru, self.output_dim());
        let mut x = vec![0.0f64; self.config.input_dim]; // [45] one-hot
        let mut a1 = vec![0.0f64; fc];
        // The layers' input, phoneme by phoneme: [P][FC], then [P][W].
        let mut seq: Vec<Vec<f64>> = Vec::with_capacity(inputs.len());
        for &(p, s) in inputs {
            x.fill(0.0);
            x[p] = 1.0;
            x[self.phonemes + s] = 1.0;
            self.fc1.apply(&x, &mut a1);
            a1.iter_mut().for_each(|v| *v = v.max(0.0));
            let mut a2 = vec![0.0f64; fc];
            self.fc2.apply(&a1, &mut a2);
            a2.iter_mut().for_each(|v| *v = v.max(0.0));
            seq.push(a2);
        }
        let (mut gi, mut gh) = (vec![0.0f64; 3 * h], vec![0.0f64; 3 * h]);
        for k in 0..self.grus.len() {
            let mut next = vec![Vec::with_capacity(self.config.gru_output()); seq.len()];
            let mut state = vec![0.0f64; h]; // h_k(−1) = 0
            for (n, u) in seq.iter().enumerate() {
                self.grus[k].step(u, &mut state, &mut gi, &mut gh);
                next[n].extend_from_slice(&state);
            }
            if let Some(rev) = self.reverse.get(k) {
                let mut state = vec![0.0f64; h]; // g_k(P) = 0
                for (n, u) in seq.iter().enumerate().rev() {
                    rev.step(u, &mut state, &mut gi, &mut gh);
                    next[n].extend_from_slice(&state);
                }
            }
            seq = next;
        }
        let mut o = vec![0.0f64; od];
        let mut out = Vec::with_capacity(inputs.len() * od); // [P, 2 + f0_points]
        for top in &seq {
            self.out.apply(top, &mut o);
            out.extend(o.iter().map(|&v| v as f32));
        }
        Ok(out)
    }

    /// Durations, voicing and F0 in seconds and Hz for a phoneme sequence
    /// (see [`DurationModel::forward`] for `inputs`): a negative duration
    /// output is clamped to 0 s. Allocates.
    pub fn predict(&self, inputs: &[(usize, usize)]) -> Result<Vec<Prosody>, SynthError> {
        let raw = self.forward(inputs)?;
        Ok(raw.chunks_exact(self.output_dim()).map(|o| self.prosody(o)).collect())
    }

    /// One raw output row `[2 + f0_points]` in physical units.
    fn prosody(&self, o: &[f32]) -> Prosody {
        let d = &self.config;
        Prosody {
            duration_s: (o[0] as f64).max(0.0) * d.duration_unit_s,
            voiced_p: sigmoid(o[1] as f64) as f32,
            f0_hz: o[2..].iter().map(|&v| (v as f64 * d.f0_unit_hz) as f32).collect(),
        }
    }

    /// Recomputes the package's golden duration outputs
    /// (`golden.duration.output`) and returns the largest |Δ| from the
    /// trainer's, or `None` when the package has no duration golden data.
    /// `voice` is the package this model was built from.
    pub fn golden_parity(&self, voice: &Voice) -> Result<Option<f32>, SynthError> {
        let Some(golden) = voice.golden().and_then(|g| g.duration.as_ref()) else { return Ok(None) };
        let pairs = golden.decode(voice.config())?;
        let got = self.forward(&pairs)?; // [P, 2 + f0_points]
        let want = golden.output.data();
        if got.len() != want.len() {
            return Err(SynthError::Shape { what: "golden.duration.output", expected: got.len(), got: want.len() });
        }
        Ok(Some(got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max)))
    }
}
