//! The features of one utterance: decode, resample to the model rate,
//! mu-law, MFCC, F0, chunks.

use std::path::Path;

use dv_audio::{chunks, decode, mulaw, resample, Chunk, ChunkConfig, Mfcc, MfccScratch, Pitch};
use dv_corpus::{ReferenceLabels, Utterance};

use crate::FeaturizeError;

/// The longest utterance featurized, in seconds. Training reads 1.25 s chunks
/// of sentence-long utterances (LJSpeech's longest is 10.1 s, VCTK's about
/// 16 s); a longer file is a recording to cut into sentences first. An
/// utterance is featurized whole in memory (its samples, mu-law codes, MFCC,
/// F0 and chunks at once), so this bounds a worker's memory: a longer one is
/// a bad item ([`FeaturizeError::TooLong`], reason `too_long`), refused from
/// its header before it is decoded, or after decoding where the header did
/// not give its length.
pub const MAX_UTTERANCE_SECONDS: f64 = 60.0;

/// Everything the feature shard stores about one utterance.
#[derive(Debug, Clone, PartialEq)]
pub struct UtteranceFeatures {
    pub id: String,
    pub speaker: String,
    /// Model rate, Hz.
    pub sample_rate: u32,
    /// Mu-law codes at the model rate.
    pub mulaw: Vec<u8>,
    /// `[frames, n_mfcc]`, frame-major.
    pub mfcc: Vec<f32>,
    pub mfcc_frames: usize,
    /// F0 per 1/256 s frame, 0 where unvoiced.
    pub f0_hz: Vec<f32>,
    pub f0_start: f64,
    pub chunks: Vec<Chunk>,
    /// Chunks dropped as predominantly silence.
    pub silent_chunks: usize,
    pub reference: Option<ReferenceLabels>,
}

impl UtteranceFeatures {
    pub fn duration(&self) -> f64 {
        self.mulaw.len() as f64 / self.sample_rate as f64
    }
}

/// The planned DSP of one worker thread.
pub(crate) struct Dsp {
    pub rate: u32,
    mfcc: Mfcc,
    scratch: MfccScratch,
    pitch: Pitch,
    chunk: ChunkConfig,
}

impl Dsp {
    pub fn new(rate: u32) -> Result<Dsp, FeaturizeError> {
        let mfcc = Mfcc::new(&dv_audio::MfccConfig::for_rate(rate))?;
        let scratch = mfcc.make_scratch();
        let pitch = Pitch::new(&dv_audio::PitchConfig::default(), rate)?;
        Ok(Dsp { rate, mfcc, scratch, pitch, chunk: ChunkConfig::for_rate(rate) })
    }
}

/// Computes the features of one utterance with a worker's DSP plan.
pub(crate) fn features_with(dsp: &mut Dsp, u: &Utterance) -> Result<UtteranceFeatures, FeaturizeError> {
    let too_long =
        |seconds: f64| FeaturizeError::TooLong { path: u.audio.clone().into(), seconds, limit: MAX_UTTERANCE_SECONDS };
    if u.duration > MAX_UTTERANCE_SECONDS {
        return Err(too_long(u.duration));
    }
    let decoded = decode(Path::new(&u.audio))?;
    let seconds = decoded.samples.len() as f64 / f64::from(decoded.info.sample_rate.max(1));
    if seconds > MAX_UTTERANCE_SECONDS {
        return Err(too_long(seconds));
    }
    let audio = resample(&decoded.samples, decoded.info.sample_rate, dsp.rate)?;
    let mut codes = vec![0u8; audio.len()];
    mulaw::encode_into(&audio, &mut codes);
    let frames = dsp.mfcc.frames(audio.len());
    let mut mfcc = vec![0.0; frames * dsp.mfcc.config().n_mfcc];
    dsp.mfcc.compute_into(&audio, &mut mfcc, &mut dsp.scratch)?;
    let f0 = dsp.pitch.track(&audio)?;
    let cut = chunks(&audio, &dsp.chunk)?;
    Ok(UtteranceFeatures {
        id: u.id.clone(),
        speaker: u.speaker.clone(),
        sample_rate: dsp.rate,
        mulaw: codes,
        mfcc,
        mfcc_frames: frames,
        f0_hz: f0.hz,
        f0_start: f0.start,
        chunks: cut.kept,
        silent_chunks: cut.dropped,
        reference: u.reference.clone(),
    })
}

/// The features of one utterance at `rate` Hz (plans the DSP each call; the
/// job keeps one plan per worker instead).
pub fn featurize_utterance(u: &Utterance, rate: u32) -> Result<UtteranceFeatures, FeaturizeError> {
    features_with(&mut Dsp::new(rate)?, u)
}
