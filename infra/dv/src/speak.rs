//! The text front end of `dv synth` (Deep Voice §2, inference): text →
//! normalized words and pauses → phonemes with stress from the lexicon →
//! durations and F0 from the voice's duration/F0 model → the 227-dim
//! conditioning frames at 256 Hz (App. A.3), one signal per sentence.
//!
//! Each sentence is framed by silence, and a short pause (comma, colon, …)
//! becomes a silence phoneme, as festival's labels of the embedded corpus
//! have them. A word missing from the lexicon is pronounced by the
//! package's grapheme-to-phoneme model (§3.1, beam search), or is an error
//! naming it when the package has none. When the package says its models were trained without
//! stress (`duration.stress`, `conditioning.stress` false: the embedded
//! corpus), every phoneme's stress is fed as "none".

use std::path::PathBuf;

use anyhow::{bail, Context};
use dv_synth::{DurationModel, G2p};
use dv_text::{
    conditioning_features, normalize, F0Contour, F0Normalization, Pause, Phoneme, Stress, StressedPhoneme,
    TimedPhoneme, Token, CONDITIONING_RATE,
};
use dv_voice::Voice;

/// A phoneme and stress from their indices (the G2P's output).
pub(crate) fn stressed(p: usize, s: usize) -> Option<StressedPhoneme> {
    let stress = char::from_digit(s as u32, 10).and_then(Stress::from_digit)?;
    Some(StressedPhoneme::new(*Phoneme::ALL.get(p)?, stress))
}

/// A word's pronunciation by the voice's G2P model (beam search at its width).
pub(crate) fn g2p_word(g2p: &G2p, word: &str) -> anyhow::Result<Vec<StressedPhoneme>> {
    let (pairs, _) = g2p.beam(word, g2p.config().beam)?;
    pairs
        .into_iter()
        .map(|(p, s)| stressed(p, s).with_context(|| format!("G2P output ({p}, {s}) for {word:?} is not a phoneme")))
        .collect()
}

/// Phoneme sequences per sentence, silences added (module docs); a word the
/// lexicon lacks goes to the G2P model, or is an error without one.
pub(crate) fn sentences(
    text: &str,
    lex: &dv_text::Lexicon,
    g2p: Option<&G2p>,
) -> anyhow::Result<Vec<(String, Vec<StressedPhoneme>)>> {
    let sil = StressedPhoneme::new(Phoneme::Sil, Stress::None);
    let mut out = Vec::new();
    let mut oov = Vec::new();
    let (mut words, mut seq) = (Vec::<String>::new(), vec![sil]);
    let mut finish = |words: &mut Vec<String>, seq: &mut Vec<StressedPhoneme>| {
        if !words.is_empty() {
            if seq.last() != Some(&sil) {
                seq.push(sil);
            }
            out.push((words.join(" "), std::mem::replace(seq, vec![sil])));
            words.clear();
        }
    };
    for t in normalize(text).tokens {
        match t {
            Token::Word(w) => {
                match (lex.get(&w).and_then(|p| p.first()), g2p) {
                    (Some(p), _) => seq.extend(p.iter().copied()),
                    (None, Some(g)) => seq.extend(g2p_word(g, &w)?),
                    (None, None) => oov.push(w.clone()),
                }
                words.push(w);
            }
            Token::Pause(Pause::Short) => {
                if seq.last() != Some(&sil) {
                    seq.push(sil);
                }
            }
            Token::Pause(Pause::Long) => finish(&mut words, &mut seq),
        }
    }
    finish(&mut words, &mut seq);
    if !oov.is_empty() {
        bail!(
            "{} word(s) not in the lexicon: {} (this voice package has no grapheme-to-phoneme model for such words: \
             add one with `dv export --voice V --g2p CKPT`, spell them out, or add them to the lexicon)",
            oov.len(),
            oov.join(" ")
        );
    }
    Ok(out)
}

/// The conditioning frames of each sentence of `text` (module docs).
pub(crate) fn text_frames(
    voice: &Voice,
    text: &str,
    cmudict: Option<PathBuf>,
) -> anyhow::Result<Vec<(String, Vec<f32>)>> {
    let cfg = voice.config();
    let model = DurationModel::new(voice).with_context(|| {
        "this voice package has no duration/F0 model, so it cannot speak text: export it with \
         `dv export --duration CKPT`, or give --features F --utterance ID"
    })?;
    let (_, lex) = crate::text::load_lexicon(cmudict)?;
    let g2p = cfg.g2p.as_ref().map(|_| G2p::new(voice)).transpose()?;
    let norm = F0Normalization { min_hz: cfg.f0.min_hz as f32, max_hz: cfg.f0.max_hz as f32 };
    let mut out = Vec::new();
    for (words, seq) in sentences(text, &lex, g2p.as_ref())? {
        let inputs: Vec<(usize, usize)> =
            seq.iter().map(|p| (p.phoneme.index(), if model.uses_stress() { p.stress.index() } else { 0 })).collect();
        let prosody = model.predict(&inputs)?;
        let mut phones = Vec::with_capacity(seq.len());
        let mut t = 0.0;
        for (p, pr) in seq.iter().zip(&prosody) {
            let stress = if cfg.conditioning.stress { p.stress } else { Stress::None };
            phones.push(TimedPhoneme {
                phoneme: StressedPhoneme::new(p.phoneme, stress),
                start: t,
                end: t + pr.duration_s,
            });
            t += pr.duration_s;
        }
        let step = 1.0 / CONDITIONING_RATE as f64;
        let frames = ((t / step).ceil() as usize).max(1);
        // F0 on the 256 Hz grid: the predicted point nearest in the phoneme
        // under each grid time, 0 where the phoneme is predicted unvoiced.
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
                let pos =
                    (((time - ph.start) / d) * pr.f0_hz.len() as f64).floor().clamp(0.0, pr.f0_hz.len() as f64 - 1.0);
                *v = pr.f0_hz[pos as usize].max(0.0);
            }
        }
        let contour = F0Contour { start: 0.0, step, hz: &hz };
        let mut feats = Vec::new();
        conditioning_features(&phones, &contour, &norm, frames, &mut feats)?;
        out.push((words, feats));
    }
    Ok(out)
}
