//! What the pipeline does with a batch's log-probabilities besides the
//! CPU Viterbi: the CUDA Viterbi of a whole batch, the PPER's prefix beam
//! search over every core, and the small conversions between pair labels,
//! phones, frames and intervals.

use dv_align::{ctc_prefix_beam, edit_distance, PhoneInterval};
use dv_text::{Phoneme, PhonemePair};

use super::AlignmentError;
use crate::Features;

/// Utterance `i`'s phoneme-pair labels (class = pair index + 1; 0 is the blank) as the decoders
/// take them.
pub(super) fn labels(data: &Features, i: usize) -> Vec<u32> {
    data.labels(i).unwrap_or_default().iter().map(|&l| l as u32).collect()
}

/// The `[frames, classes]` log-probabilities of the batch's `b`-th utterance in `flat` (`[b,
/// t_max, classes]`).
pub(super) fn rows(flat: &[f32], b: usize, frames: usize, t_max: usize, classes: usize) -> &[f32] {
    &flat[b * t_max * classes..(b * t_max + frames) * classes]
}

/// The Viterbi paths of a batch's utterances (`flat`: `[b, t_max, classes]` log-probabilities)
/// from one launch of dv-align's CUDA kernel, or None when the kernel refuses the batch.
pub(super) fn gpu_viterbi(
    g: &dv_align::GpuAligner,
    data: &Features,
    chunk: &[usize],
    flat: &[f32],
    t_max: usize,
    classes: usize,
) -> Option<Vec<dv_align::CtcAlignment>> {
    let all: Vec<Vec<u32>> = chunk.iter().map(|&i| labels(data, i)).collect();
    let l_max = all.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let mut padded = vec![1u32; chunk.len() * l_max]; // [b, l_max]
    for (b, l) in all.iter().enumerate() {
        padded[b * l_max..b * l_max + l.len()].copy_from_slice(l);
    }
    let lens: Vec<dv_align::CtcLen> = chunk
        .iter()
        .zip(&all)
        .map(|(&i, l)| dv_align::CtcLen { frames: data.frames_of(i).unwrap_or(0), labels: l.len() })
        .collect();
    let shape = dv_align::CtcShape { batch: chunk.len(), frames: t_max, classes, labels: l_max };
    g.ctc_batch(flat, shape, &padded, &lens, 0).ok()
}

/// The phoneme-pair edits and reference pairs of a batch's utterances (`flat`: `[b, t_max,
/// classes]` log-probabilities), each decoded by the CTC prefix beam search of width `beam`, the
/// utterances spread over every core.
pub(super) fn pper_batch(
    data: &Features,
    chunk: &[usize],
    flat: &[f32],
    t_max: usize,
    classes: usize,
    beam: usize,
) -> Result<(usize, usize), AlignmentError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(chunk.len()).max(1);
    let per = chunk.len().div_ceil(threads);
    let parts: Vec<Result<(usize, usize), AlignmentError>> = std::thread::scope(|s| {
        let handles: Vec<_> = chunk
            .chunks(per)
            .enumerate()
            .map(|(part, ids)| {
                s.spawn(move || -> Result<(usize, usize), AlignmentError> {
                    let (mut edits, mut refs) = (0usize, 0usize);
                    for (j, &i) in ids.iter().enumerate() {
                        let b = part * per + j;
                        let frames = data.frames_of(i).unwrap_or(0);
                        let labels = labels(data, i);
                        let rows = rows(flat, b, frames, t_max, classes);
                        let (decoded, _) = ctc_prefix_beam(rows, frames, classes, 0, beam, 16)?;
                        edits += edit_distance(&decoded, &labels);
                        refs += labels.len();
                    }
                    Ok((edits, refs))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(AlignmentError::Panicked { what: "a PPER thread" })))
            .collect()
    });
    parts.into_iter().try_fold((0, 0), |(e, r), p| p.map(|(pe, pr)| (e + pe, r + pr)))
}

/// Each frame's mean log-mel level in dB from its MFCCs: the orthonormal
/// DCT's c0 is √n_mels × the mean of the log-mel bands (`dv_audio::Mfcc`).
pub(super) fn mfcc_levels_db(mfcc: &[f32], frames: usize) -> Vec<f64> {
    let n_mels = dv_audio::MfccConfig::default().n_mels as f64;
    let coefficients = mfcc.len() / frames.max(1);
    mfcc.chunks_exact(coefficients.max(1)).map(|f| f[0] as f64 / n_mels.sqrt()).collect()
}

/// The merged phone sequence a pair-label sequence spells (`sil HH … sil`).
pub(super) fn phones_of(labels: &[i64]) -> Vec<Phoneme> {
    let pairs: Vec<PhonemePair> =
        labels.iter().filter_map(|&l| usize::try_from(l - 1).ok().and_then(PhonemePair::from_index)).collect();
    let mut out: Vec<Phoneme> = pairs.first().map(|p| vec![p.0]).unwrap_or_default();
    out.extend(pairs.iter().map(|p| p.1));
    out
}

/// Reference phone intervals from internal boundaries over `[0, duration]`.
pub(super) fn intervals(bounds: &[f64], duration: f64) -> Vec<PhoneInterval> {
    let mut edges = vec![0.0];
    edges.extend_from_slice(bounds);
    edges.push(duration);
    edges.windows(2).map(|w| PhoneInterval { start: w[0], end: w[1] }).collect()
}
