//! What the corpus loaders left out, counted by reason: one counter for
//! [`Features`](crate::Features), [`Chunks`](crate::Chunks) and the prosody
//! data read through the chunks. A skipped utterance never fails a run; the
//! counts are logged when it starts.

use serde::Serialize;

/// Why one utterance (or, for `ChunkUnusable`, one chunk) was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    NoReference,
    UnknownPhone,
    TooShortForCtc,
    OverMaxFrames,
    BadTimes,
    WrongSampleRate,
    Malformed,
    ChunkUnusable,
}

/// Utterances and chunks left out, by reason. Each loader gives only the
/// reasons that apply to it; the others stay 0.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// `ref_phones` null or empty.
    pub no_reference: usize,
    /// A phone name outside the inventory of App. A.3.
    pub unknown_phone: usize,
    /// Fewer frames than labels plus repeated neighbouring labels (features).
    pub too_short_for_ctc: usize,
    /// More frames than `max_frames` (features).
    pub over_max_frames: usize,
    /// Phone times that do not fit the phones or the audio (chunks).
    pub bad_times: usize,
    /// Audio at a rate other than the model's (chunks).
    pub wrong_sample_rate: usize,
    /// Columns null, non-finite, or of the wrong length.
    pub malformed: usize,
    /// Chunks whose window does not start on a conditioning frame, or that
    /// name an utterance that was skipped or is absent.
    pub chunks_unusable: usize,
}

impl Skipped {
    pub(crate) fn count(&mut self, reason: Reason) {
        *self.slot(reason) += 1;
    }

    fn slot(&mut self, reason: Reason) -> &mut usize {
        match reason {
            Reason::NoReference => &mut self.no_reference,
            Reason::UnknownPhone => &mut self.unknown_phone,
            Reason::TooShortForCtc => &mut self.too_short_for_ctc,
            Reason::OverMaxFrames => &mut self.over_max_frames,
            Reason::BadTimes => &mut self.bad_times,
            Reason::WrongSampleRate => &mut self.wrong_sample_rate,
            Reason::Malformed => &mut self.malformed,
            Reason::ChunkUnusable => &mut self.chunks_unusable,
        }
    }

    /// Utterances skipped (unusable chunks are not utterances).
    pub fn total(&self) -> usize {
        self.utterance_reasons().iter().map(|(_, n)| n).sum()
    }

    fn utterance_reasons(&self) -> [(&'static str, usize); 7] {
        [
            ("no reference phones", self.no_reference),
            ("unknown phone", self.unknown_phone),
            ("too short for CTC", self.too_short_for_ctc),
            ("over max_frames", self.over_max_frames),
            ("bad times", self.bad_times),
            ("wrong sample rate", self.wrong_sample_rate),
            ("malformed", self.malformed),
        ]
    }
}

/// `skipped 3: no reference phones 1, unknown phone 2; unusable chunks 4`:
/// the utterances skipped, then each reason that occurred.
impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped {}", self.total())?;
        let reasons: Vec<String> =
            self.utterance_reasons().iter().filter(|(_, n)| *n > 0).map(|(what, n)| format!("{what} {n}")).collect();
        if !reasons.is_empty() {
            write!(f, ": {}", reasons.join(", "))?;
        }
        if self.chunks_unusable > 0 {
            write!(f, "; unusable chunks {}", self.chunks_unusable)?;
        }
        Ok(())
    }
}
