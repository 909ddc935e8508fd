//! The pipeline: the checkpoint, the batched forward pass of the
//! segmentation model, each utterance's boundaries from Viterbi (CPU, or a
//! batch per CUDA launch) or §3.2's beam over chained pairs, the edge
//! trimming, the scoring, and the outputs.

use std::time::Instant;

use dv_align::{
    clamp_edge_pauses, confine_labels, constrained_pair_beam, ctc_viterbi, inner_within, phone_timing,
    quarantine_by_group, speech_extent, speech_frames, BoundaryErrors, TextGrid,
};
use dv_text::{Phoneme, PhonemePair};
use dv_torch::tch;

use super::decode::{gpu_viterbi, intervals, labels, mfcc_levels_db, phones_of, pper_batch, rows};

use super::output::{write_alignments, write_quarantine, write_report, Aligned};
use super::plot::plot;
use super::{
    AlignOptions, AlignReport, AlignmentError, Decoder, Failure, HeldOutQuarantine, Plot, Pper, QuarantineReport,
    ViterbiBackend, ViterbiOn,
};
use crate::checkpoint::{load_model_weights, open};
use crate::{DataConfig, Dataset, Features, FeaturesConfig, RunConfig, Segmentation, FRAME_SECONDS, PAIR_CLASSES};

/// Frames inside speech (by the levels, `trim_db`) where no inner pair may
/// fire, at each end: the first inner boundary then lies after the onset,
/// so that [`clamp_edge_pauses`] can always move the leading pause's end to
/// it (and likewise at the end).
pub const EDGE_MARGIN_FRAMES: usize = 1;

/// Aligns the utterances of `o.features` with the segmentation checkpoint
/// `o.checkpoint` and writes the outputs under `o.out` (module docs).
/// `progress` receives a line at start, where the Viterbi decoder runs, and
/// every ten batches.
///
/// # Errors
/// Options out of range, an unreadable checkpoint or one whose model does
/// not predict phoneme pairs, features with nothing to align, an output that
/// cannot be written, or no utterance aligned ([`AlignmentError`]).
pub fn align(o: &AlignOptions, progress: &mut dyn FnMut(&str)) -> Result<AlignReport, AlignmentError> {
    let started = Instant::now();
    if o.batch == 0 {
        return Err(AlignmentError::Batch);
    }
    if !(o.trim_db.is_finite() && o.trim_db >= 0.0) {
        return Err(AlignmentError::TrimDb { db: o.trim_db });
    }
    let (model, step, cfg) = load_model(&o.checkpoint, o.device)?;
    let (validation_fraction, seed) = match (&cfg.data, o.held_out) {
        (_, false) => (0.0, 0),
        (DataConfig::Features(f), true) => (f.validation_fraction, f.seed),
        (_, true) => return Err(AlignmentError::NotFeaturesRun { checkpoint: o.checkpoint.display().to_string() }),
    };
    let split =
        Features::load(&FeaturesConfig { url: o.features.clone(), validation_fraction, seed, max_frames: None })?;
    let data = if o.held_out { split.validation } else { split.train };
    if data.is_empty() {
        return Err(AlignmentError::NothingToAlign {
            features: o.features.clone(),
            skipped: split.skipped.to_string(),
        });
    }
    progress(&format!(
        "aligning {} utterances ({:.1} min) with {} (step {step}); {}",
        data.len(),
        data.frames() as f64 * FRAME_SECONDS / 60.0,
        o.checkpoint.display(),
        split.skipped
    ));
    for id in &o.plots {
        if !data.ids().contains(id) {
            return Err(AlignmentError::NoSuchUtterance { id: id.clone(), utterances: data.len() });
        }
    }
    let tg_dir = o.out.join("textgrid");
    std::fs::create_dir_all(&tg_dir).map_err(AlignmentError::io("creating", &tg_dir))?;

    // Longest first in batches of similar length: little padding.
    let mut order: Vec<usize> = (0..data.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(data.frames_of(i).unwrap_or(0)));
    let classes = PAIR_CLASSES as usize;
    let mut aligned: Vec<Aligned> = Vec::with_capacity(data.len());
    let mut failed: Vec<(String, String)> = Vec::new();
    let mut errors = BoundaryErrors::new();
    let mut unscored = 0usize;
    let mut trimmed = 0usize;
    let (mut confined, mut overruled) = (0usize, 0usize);
    // The beam decoder: utterances whose decoded pairs differ from the reference (not scored).
    let mut different = 0usize;
    let gpu = match (o.decoder, o.viterbi, o.device) {
        (Decoder::Beam, _, _) | (_, ViterbiOn::Cpu, _) | (_, ViterbiOn::Auto, tch::Device::Cpu) => None,
        (_, ViterbiOn::Cuda, tch::Device::Cpu) => Some(dv_align::GpuAligner::new(0)?),
        (_, ViterbiOn::Cuda | ViterbiOn::Auto, tch::Device::Cuda(n)) => Some(dv_align::GpuAligner::new(n)?),
        (_, _, device) => return Err(AlignmentError::Device { device }),
    };
    if let Some(g) = &gpu {
        progress(&format!("CTC Viterbi on {} (CUDA kernel, one launch per batch)", g.device_name()));
    }
    let mut viterbi_s = 0.0f64;
    let (mut pair_edits, mut pair_refs) = (0usize, 0usize);
    for (k, chunk) in order.chunks(o.batch).enumerate() {
        let batch = data.batch(chunk, o.device)?;
        let lp = tch::no_grad(|| model.log_probs(&batch, false, 0))?; // [t, b, classes]
        let lp = lp.f_transpose(0, 1)?.f_contiguous()?.f_to_device(tch::Device::Cpu)?; // [b, t, classes]
        let t_max = lp.size()[1] as usize;
        let flat = Vec::<f32>::try_from(lp.f_reshape([-1])?)?;
        // PPER: the prefix beam search is the slowest step here (about 0.1 s an utterance), so the
        // batch's utterances are decoded on every core at once. It reads the model's own
        // posteriors, not the confined ones below.
        if o.pper_beam > 0 {
            let (edits, refs) = pper_batch(&data, chunk, &flat, t_max, classes, o.pper_beam)?;
            pair_edits += edits;
            pair_refs += refs;
        }
        // With the transcript's pairs (Viterbi), each utterance's pairs but the edge ones are
        // decoded inside its speech (the frames within trim_db of its loudest, EDGE_MARGIN_FRAMES
        // fewer at each end): dv_align::confine_labels. A path that cannot keep inside is decoded
        // again from the model's own posteriors. The beam decoder, which needs no transcript,
        // decodes the model's posteriors as they are.
        let confine = o.trim_db > 0.0 && o.decoder == Decoder::Viterbi;
        let windows: Vec<Option<(usize, usize)>> = chunk
            .iter()
            .map(|&i| {
                let frames = data.frames_of(i).unwrap_or(0);
                let levels = mfcc_levels_db(data.mfcc(i).unwrap_or_default(), frames);
                confine.then(|| speech_frames(&levels, o.trim_db)).flatten().map(|(a, b)| {
                    (a + EDGE_MARGIN_FRAMES, b.saturating_sub(EDGE_MARGIN_FRAMES).max(a + EDGE_MARGIN_FRAMES))
                })
            })
            .collect();
        let mut confined_flat: Option<Vec<f32>> = None;
        for (b, w) in windows.iter().enumerate() {
            if let Some(w) = *w {
                let inside = confined_flat.get_or_insert_with(|| flat.clone());
                let frames = data.frames_of(chunk[b]).unwrap_or(0);
                let l = labels(&data, chunk[b]);
                let keep = [0, l.first().map_or(0, |&c| c as usize), l.last().map_or(0, |&c| c as usize)];
                confine_labels(&mut inside[b * t_max * classes..(b * t_max + frames) * classes], classes, &keep, w);
            }
        }
        let inside = confined_flat.as_deref().unwrap_or(&flat);
        // The whole batch's Viterbi paths on the GPU, when asked; a batch the kernel refuses (an
        // utterance too short for its pairs, say) falls back to the CPU utterance by utterance,
        // where the bad one fails alone.
        let tv = Instant::now();
        let gpu_paths = gpu.as_ref().and_then(|g| gpu_viterbi(g, &data, chunk, inside, t_max, classes));
        viterbi_s += tv.elapsed().as_secs_f64();
        for (b, &i) in chunk.iter().enumerate() {
            let id = data.ids()[i].clone();
            let frames = data.frames_of(i).unwrap_or(0);
            let labels = labels(&data, i);
            let own = rows(&flat, b, frames, t_max, classes);
            let rows = rows(inside, b, frames, t_max, classes);
            let duration = frames as f64 * FRAME_SECONDS;
            let reference_labels = labels.clone();
            let mut labels = labels;
            let window = windows[b];
            // Whether a decoded path kept its inner pairs inside speech; counted, and if not,
            // decoded again.
            let mut kept = |al: &dv_align::CtcAlignment| match window {
                Some(w) if inner_within(al, w) => {
                    confined += 1;
                    true
                }
                Some(_) => {
                    overruled += 1;
                    false
                }
                None => true,
            };
            let timing = if o.decoder == Decoder::Beam {
                let pair = |c: u32| {
                    c.checked_sub(1)
                        .and_then(|k| PhonemePair::from_index(k as usize))
                        .map(|p| (p.0.index() as u16, p.1.index() as u16))
                };
                constrained_pair_beam(own, frames, classes, 0, pair, o.beam_width, 16).and_then(|d| {
                    labels = d.labels;
                    phone_timing(&d.alignment, FRAME_SECONDS, duration)
                })
            } else {
                let tv = Instant::now();
                let path = match &gpu_paths {
                    Some(paths) => Ok(paths[b].clone()),
                    None => ctc_viterbi(rows, frames, classes, &labels, 0),
                };
                let path =
                    path.and_then(|al| if kept(&al) { Ok(al) } else { ctc_viterbi(own, frames, classes, &labels, 0) });
                viterbi_s += tv.elapsed().as_secs_f64();
                path.and_then(|al| phone_timing(&al, FRAME_SECONDS, duration))
            };
            let mut timing = match timing {
                Ok(t) => t,
                Err(e) => {
                    failed.push((id, e.to_string()));
                    continue;
                }
            };
            let pair_labels: Vec<i64> = labels.iter().map(|&l| l as i64).collect();
            let phonemes = phones_of(&pair_labels);
            if o.trim_db > 0.0 {
                let levels = mfcc_levels_db(data.mfcc(i).unwrap_or_default(), frames);
                if let Some(extent) = speech_extent(&levels, FRAME_SECONDS, o.trim_db) {
                    let pause = |p: Option<&Phoneme>| p == Some(&Phoneme::Sil);
                    trimmed +=
                        clamp_edge_pauses(&mut timing.phones, pause(phonemes.first()), pause(phonemes.last()), extent);
                }
            }
            // The reference's stress (CMUDict's, for phones from transcripts)
            // rides along, for the duration/F0 model and the conditioning.
            let phones: Vec<String> = match data.reference_stressed(i) {
                Some(reference) => crate::data::restressed(&phonemes, reference),
                None => phonemes.iter().map(|p| p.to_string()).collect(),
            };
            match data.reference_boundaries(i) {
                Some(bounds) if labels == reference_labels => {
                    errors.add(&timing.phones, &intervals(bounds, duration))?
                }
                Some(_) => different += 1,
                None => unscored += 1,
            }
            let grid: Vec<(&str, f64, f64)> =
                phones.iter().zip(&timing.phones).map(|(p, t)| (p.as_str(), t.start, t.end)).collect();
            let text = TextGrid::from_phones(&grid, duration).and_then(|g| g.to_long_text())?;
            dv_util::write_atomic(&tg_dir.join(format!("{id}.TextGrid")), text.as_bytes())?;
            aligned.push(Aligned { id, phones, timing: timing.phones, confidence: timing.confidence });
        }
        let done = aligned.len() + failed.len();
        if k % 10 == 9 || done == data.len() {
            progress(&format!("aligned {done}/{} utterances, {:.1} s", data.len(), started.elapsed().as_secs_f64()));
        }
    }
    aligned.sort_by(|x, y| x.id.cmp(&y.id));
    if aligned.is_empty() {
        return Err(AlignmentError::NoneAligned { failed });
    }

    let conf: Vec<(String, f64)> = aligned.iter().map(|u| (u.id.clone(), u.confidence)).collect();
    // Judged against its peers: the segmentation model's training utterances, and those its run
    // held out (dv_align::quarantine_by_group).
    let seg_split = match &cfg.data {
        DataConfig::Features(f) if !o.held_out && f.validation_fraction > 0.0 => Some((f.validation_fraction, f.seed)),
        _ => None,
    };
    let unseen = |id: &String| seg_split.is_some_and(|(fraction, seed)| crate::is_validation(id, seed, fraction));
    let unseen_count = conf.iter().filter(|(id, _)| unseen(id)).count();
    let (q, q_unseen) = quarantine_by_group(&conf, unseen, o.quarantine_k)?;
    write_quarantine(&o.out, &q, &conf)?;
    write_alignments(&o.out, &aligned, &q.ids)?;

    let mut report = AlignReport {
        checkpoint: o.checkpoint.display().to_string(),
        checkpoint_step: step,
        features: o.features.clone(),
        utterances: data.len(),
        held_out: o.held_out,
        aligned: aligned.len(),
        failed: failed.into_iter().map(|(id, reason)| Failure { id, reason }).collect(),
        skipped_by_loader: split.skipped.to_string(),
        confidence_median: q.median,
        quarantine: QuarantineReport {
            k: o.quarantine_k,
            spread: q.spread,
            threshold: q.threshold,
            ids: q.ids,
            held_out_by_segmentation: q_unseen.map(|u| HeldOutQuarantine {
                utterances: unseen_count,
                median: u.median,
                spread: u.spread,
                threshold: u.threshold,
                quarantined: u.ids.len(),
            }),
        },
        boundary_error: errors.summary(),
        without_reference: unscored,
        decoder: o.decoder,
        trim_db: o.trim_db,
        edge_boundaries_trimmed: trimmed,
        edge_confined: confined,
        edge_confine_overruled: overruled,
        viterbi: if gpu.is_some() { ViterbiBackend::Cuda } else { ViterbiBackend::Cpu },
        viterbi_seconds: viterbi_s,
        decoded_other_pairs: different,
        pper: (o.pper_beam > 0 && pair_refs > 0).then(|| Pper {
            beam: o.pper_beam,
            error_rate: pair_edits as f64 / pair_refs as f64,
            edits: pair_edits,
            reference_pairs: pair_refs,
        }),
        seconds: started.elapsed().as_secs_f64(),
        plots: Vec::new(),
    };
    write_report(&o.out, &report)?;

    for id in &o.plots {
        let Some(u) = aligned.iter().find(|u| &u.id == id) else {
            report.plots.push(Plot::NotAligned { id: id.clone() });
            continue;
        };
        let index = data.ids().iter().position(|x| x == id);
        let path = plot(&o.out, &o.features, u, index.and_then(|i| data.reference_boundaries(i)))?;
        report.plots.push(Plot::Written { id: id.clone(), path });
    }
    Ok(report)
}

/// The model a checkpoint holds, with the sizes of the run that wrote it, its step and run config.
fn load_model(path: &std::path::Path, device: tch::Device) -> Result<(Segmentation, u64, RunConfig), AlignmentError> {
    let ck = open(path)?;
    let sizes = ck.config.segmentation_sizes(&ck.name)?;
    if sizes.classes != PAIR_CLASSES {
        return Err(AlignmentError::NotPairModel { checkpoint: ck.name, classes: sizes.classes });
    }
    let model = Segmentation::new(&sizes, device)?;
    load_model_weights(&ck.name, &ck.data, &model)?;
    Ok((model, ck.step(), ck.config))
}
