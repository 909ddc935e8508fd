//! A planned sentence: phonemes and words with times from the duration/F0
//! model, and the 227-dim conditioning frames at 256 Hz (App. A.3) that
//! the WaveNet renders.

use dv_synth::DurationModel;
use dv_text::{
    conditioning_features, F0Contour, F0Normalization, Phoneme, Stress, StressedPhoneme, TimedPhoneme,
    CONDITIONING_DIM, CONDITIONING_RATE,
};
use dv_voice::VoiceConfig;

use crate::error::SpeakError;
use crate::pronunciation::Pronounced;

/// The symbol of silence in [`PhonemeTiming::phoneme`].
pub const PAUSE: &str = "pau";

/// One phoneme of a sentence and its time span from the sentence's start.
#[derive(Debug, Clone, PartialEq)]
pub struct PhonemeTiming {
    /// ARPAbet as CMUDict writes it, vowels with their stress digit (`AH0`,
    /// `EY1`, `HH`), or [`PAUSE`] for silence.
    pub phoneme: String,
    pub start_s: f64,
    pub end_s: f64,
}

/// One word of a sentence and the span of its phonemes.
#[derive(Debug, Clone, PartialEq)]
pub struct WordTiming {
    /// The normalized word (lower case, `a-z` and inner apostrophes).
    pub word: String,
    pub start_s: f64,
    pub end_s: f64,
}

/// A sentence ready to render ([`crate::Speaker::render`]). Times are in
/// seconds from the sentence's start; phonemes follow each other without
/// gaps from 0 to `duration_s`, and words are in text order.
#[derive(Debug, Clone, PartialEq)]
pub struct Sentence {
    /// The normalized words joined by spaces.
    pub text: String,
    /// Every phoneme, the framing and pause silences included.
    pub phonemes: Vec<PhonemeTiming>,
    pub words: Vec<WordTiming>,
    /// The sum of the predicted durations.
    pub duration_s: f64,
    /// Position in the text (0 for the first sentence): the sampler's seed
    /// of this sentence depends on it ([`crate::RenderOptions::seed`]).
    pub(crate) index: usize,
    /// `[F, 227]` conditioning frames at 256 Hz.
    pub(crate) frames: Vec<f32>,
    /// `F · hop`: the samples a full render produces.
    pub(crate) samples: usize,
}

impl Sentence {
    /// The samples a full render produces (conditioning frames × hop):
    /// `duration_s × sample_rate` rounded up to a whole frame.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// The number of 256 Hz conditioning frames.
    pub fn frames(&self) -> usize {
        self.frames.len() / CONDITIONING_DIM
    }

    /// `[F, 227]` conditioning frames at 256 Hz (`dv_text::conditioning`),
    /// row-major.
    pub fn conditioning_frames(&self) -> &[f32] {
        &self.frames
    }

    /// Whether each conditioning frame is voiced (its voiced flag, offset
    /// 0), as voiced-only sampling modes read it.
    pub fn voiced(&self) -> Vec<bool> {
        self.frames.chunks_exact(CONDITIONING_DIM).map(|f| f[0] > 0.5).collect()
    }

    /// The position of this sentence in its text (0 for the first).
    pub fn index(&self) -> usize {
        self.index
    }

    /// A sentence of given conditioning frames (`[F, 227]` row-major, F ≥ 1),
    /// such as a corpus utterance's own phonemes, durations and F0: no
    /// phoneme or word timings. Rendered with the seed of sentence `index`.
    pub(crate) fn from_frames(
        text: String,
        frames: Vec<f32>,
        index: usize,
        config: &VoiceConfig,
    ) -> Result<Sentence, SpeakError> {
        if frames.is_empty() || !frames.len().is_multiple_of(CONDITIONING_DIM) {
            return Err(SpeakError::BadOption {
                what: "conditioning frames",
                reason: format!("{} values are not a positive multiple of {CONDITIONING_DIM}", frames.len()),
            });
        }
        let f = frames.len() / CONDITIONING_DIM;
        Ok(Sentence {
            text,
            phonemes: Vec::new(),
            words: Vec::new(),
            duration_s: f as f64 / CONDITIONING_RATE as f64,
            index,
            frames,
            samples: f * config.hop(),
        })
    }
}

fn symbol(p: StressedPhoneme) -> String {
    if p.phoneme == Phoneme::Sil {
        PAUSE.to_string()
    } else {
        p.to_string()
    }
}

/// Times `pronounced` with the duration/F0 model (every duration divided by
/// `speed`) and builds its conditioning frames.
///
/// The F0 on the 256 Hz grid is the predicted point nearest in the phoneme
/// under each grid time, 0 where the phoneme is predicted unvoiced. With
/// `conditioning.stress` false (a WaveNet trained without stress) every
/// frame's stress is "none"; with `duration.stress` false the duration model
/// is fed stress "none".
pub(crate) fn plan_sentence(
    pronounced: &Pronounced,
    index: usize,
    model: &DurationModel,
    config: &VoiceConfig,
    speed: f64,
) -> Result<Sentence, SpeakError> {
    let seq = &pronounced.phonemes;
    let inputs: Vec<(usize, usize)> =
        seq.iter().map(|p| (p.phoneme.index(), if model.uses_stress() { p.stress.index() } else { 0 })).collect();
    let prosody = model.predict(&inputs)?;
    let mut phones = Vec::with_capacity(seq.len());
    let mut t = 0.0;
    for (p, pr) in seq.iter().zip(&prosody) {
        let stress = if config.conditioning.stress { p.stress } else { Stress::None };
        let d = pr.duration_s / speed;
        phones.push(TimedPhoneme { phoneme: StressedPhoneme::new(p.phoneme, stress), start: t, end: t + d });
        t += d;
    }
    let step = 1.0 / CONDITIONING_RATE as f64;
    let frames = ((t / step).ceil() as usize).max(1);
    let mut hz = vec![0.0f32; frames];
    let mut k = 0;
    for (j, v) in hz.iter_mut().enumerate() {
        let time = j as f64 * step;
        while k + 1 < phones.len() && time >= phones[k].end {
            k += 1;
        }
        let (ph, pr) = (&phones[k], &prosody[k]);
        let d = ph.end - ph.start;
        if pr.voiced() && d > 0.0 && !pr.f0_hz.is_empty() {
            let pos = (((time - ph.start) / d) * pr.f0_hz.len() as f64).floor().clamp(0.0, pr.f0_hz.len() as f64 - 1.0);
            *v = pr.f0_hz[pos as usize].max(0.0);
        }
    }
    let contour = F0Contour { start: 0.0, step, hz: &hz };
    let norm = F0Normalization { min_hz: config.f0.min_hz as f32, max_hz: config.f0.max_hz as f32 };
    let mut feats = Vec::new();
    conditioning_features(&phones, &contour, &norm, frames, &mut feats)?;
    let phonemes: Vec<PhonemeTiming> = seq
        .iter()
        .zip(&phones)
        .map(|(p, tp)| PhonemeTiming { phoneme: symbol(*p), start_s: tp.start, end_s: tp.end })
        .collect();
    let words = pronounced
        .words
        .iter()
        .map(|(w, r)| {
            // A word's span is its phonemes'; one with none (an empty G2P
            // output) is the instant where it would start.
            let start_s = phones.get(r.start).map_or(t, |p| p.start);
            let end_s = if r.is_empty() { start_s } else { phones[r.end - 1].end };
            WordTiming { word: w.clone(), start_s, end_s }
        })
        .collect();
    Ok(Sentence {
        text: pronounced.text(),
        phonemes,
        words,
        duration_s: t,
        index,
        samples: frames * config.hop(),
        frames: feats,
    })
}
