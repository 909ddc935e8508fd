//! `dv align`: phoneme boundaries for a featurized corpus from a trained
//! segmentation model (Deep Voice §3.2): the model's phoneme-pair posteriors,
//! CTC Viterbi over each utterance's known pair sequence (exact dynamic
//! programming, no beam, so long files never fail for a narrow beam), and
//! each phoneme boundary at its pair's position.
//!
//! Writes under `--out`: `alignments.parquet` (id, phones, starts, ends in
//! seconds, confidence = mean log-likelihood per frame, quarantined),
//! `textgrid/<id>.TextGrid` (Praat, one "phones" tier), `quarantine.tsv`
//! (utterances whose confidence is far below the corpus median: bad
//! transcripts are the usual cause) and `report.json` (counts, failures
//! with reasons, the quarantine rule, and the boundary error against the
//! corpus's reference boundaries when it has them).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use dv_align::{
    clamp_edge_pauses, constrained_pair_beam, ctc_prefix_beam, ctc_viterbi, edit_distance, phone_timing,
    quarantine_by_group, speech_extent, BoundaryErrors, PhoneInterval, TextGrid,
};
use dv_plot::{Heatmap, Marker, Rgb};
use dv_text::{Phoneme, PhonemePair};
use dv_torch::tch;
use dv_train::checkpoint::decode;
use dv_train::{Dataset, Features, FeaturesConfig, RunConfig, Segmentation, FRAME_SECONDS, PAIR_CLASSES};
use polars::prelude::*;
use serde_json::json;

/// `--decoder`: where the boundaries come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Decoder {
    /// CTC Viterbi over each utterance's known pair sequence.
    Viterbi,
    /// §3.2's beam search over chained pairs.
    Beam,
}

impl Decoder {
    fn name(self) -> &'static str {
        match self {
            Decoder::Viterbi => "viterbi",
            Decoder::Beam => "beam",
        }
    }
}

/// `--viterbi`: where the Viterbi decoder runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ViterbiOn {
    Cpu,
    Cuda,
    /// cuda when `--device` is a GPU.
    Auto,
}

#[derive(Args)]
pub(crate) struct AlignArgs {
    /// A `dv featurize --out` directory whose shards carry the phones to align (`ref_phones`).
    #[arg(long)]
    features: String,
    /// A segmentation checkpoint written by `dv train` (`step-….safetensors` or `best.safetensors`).
    #[arg(long)]
    checkpoint: PathBuf,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// `cpu`, `cuda` or `cuda:N` for the model's forward pass.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Utterances per forward pass.
    #[arg(long, default_value_t = 16)]
    batch: usize,
    /// Boundaries from `viterbi` (exact, over each utterance's known pair sequence) or `beam`
    /// (§3.2's decoder: a beam search over chained pairs, no transcript needed).
    #[arg(long, value_enum, default_value_t = Decoder::Viterbi)]
    decoder: Decoder,
    /// Where `--decoder viterbi` runs: `cpu`, `cuda` (dv-align's CUDA kernel, a batch per
    /// launch, bit-identical paths) or `auto` (cuda when `--device` is a GPU).
    #[arg(long, value_enum, default_value_t = ViterbiOn::Auto)]
    viterbi: ViterbiOn,
    /// Beam width of `--decoder beam` (§3.2: 50).
    #[arg(long, default_value_t = 50)]
    beam_width: usize,
    /// Beam width of the CTC prefix beam search that measures the phoneme-pair error rate (PPER,
    /// §3.2) against each utterance's reference pairs; 0 skips it.
    #[arg(long, default_value_t = 10)]
    pper_beam: usize,
    /// Quarantine utterances whose confidence is below median − k × 1.4826 × MAD, the
    /// segmentation model's training utterances and those its run held out each against their
    /// own median and MAD.
    #[arg(long, default_value_t = dv_align::DEFAULT_K)]
    quarantine_k: f64,
    /// Draw this utterance's log-mel spectrogram with the predicted (and reference) boundaries
    /// to `<out>/plots/<ID>.png`; repeat for more.
    #[arg(long = "plot", value_name = "ID")]
    plots: Vec<String>,
    /// Align only the utterances the checkpoint's training run held out for validation (its
    /// `[data] validation_fraction` and `seed`), to measure the aligner on unseen audio.
    #[arg(long)]
    held_out: bool,
    /// The pauses at the ends of an utterance end where speech starts and stops: the first and
    /// last frames within this many dB of the loudest (as `librosa.effects.trim`; Coqui TTS's
    /// default `trim_db`). CTC does not tie the first and last pairs to a moment, so the model's
    /// own boundaries there are not used when they fall inside the pause. 0 keeps the model's.
    #[arg(long, default_value_t = 45.0)]
    trim_db: f64,
}

/// The Parquet shards of a featurize output (a directory or `file://` URL), in name order.
pub(crate) fn shard_files(features: &str) -> anyhow::Result<Vec<PathBuf>> {
    let dir = Path::new(features.strip_prefix("file://").unwrap_or(features)).join("shards");
    let mut shards: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    shards.sort();
    Ok(shards)
}

/// The mu-law audio and its rate of utterance `id` in a featurize output.
fn read_audio(features: &str, id: &str) -> anyhow::Result<(Vec<f32>, u32)> {
    for shard in shard_files(features)? {
        let file = std::fs::File::open(&shard).with_context(|| format!("opening {}", shard.display()))?;
        let cols = ["id", "mulaw", "sample_rate"].map(String::from).to_vec();
        let df = ParquetReader::new(file).with_columns(Some(cols)).finish()?;
        let ids = df.column("id")?.str()?.clone();
        let Some(row) = ids.iter().position(|x| x == Some(id)) else { continue };
        let rate = df.column("sample_rate")?.cast(&DataType::UInt32)?.u32()?.get(row);
        let bytes = df.column("mulaw")?.binary()?.get(row).map(<[u8]>::to_vec);
        let (Some(rate), Some(bytes)) = (rate, bytes) else {
            bail!("{}: utterance {id} has no audio", shard.display());
        };
        let mut audio = vec![0.0f32; bytes.len()];
        dv_audio::mulaw::decode_into(&bytes, &mut audio);
        return Ok((audio, rate));
    }
    bail!("{features}: no utterance {id} in the shards")
}

/// `<out>/plots/<id>.png`: the log-mel spectrogram with the predicted
/// boundaries (labelled) and the reference ones (cyan, where known).
fn plot(out: &Path, features: &str, u: &Aligned, reference: Option<&[f64]>) -> anyhow::Result<PathBuf> {
    let (audio, rate) = read_audio(features, &u.id)?;
    let mfcc = dv_audio::Mfcc::new(&dv_audio::MfccConfig::for_rate(rate))?;
    let frames = mfcc.frames(audio.len());
    let mut scratch = mfcc.make_scratch();
    let mut coeffs = vec![0.0f32; frames * mfcc.config().n_mfcc];
    mfcc.compute_into(&audio, &mut coeffs, &mut scratch)?;
    let hop = mfcc.config().hop_length as f64 / rate as f64;
    let mut markers: Vec<Marker> = reference
        .unwrap_or_default()
        .iter()
        .map(|&x| Marker { x, label: String::new(), row: 0, colour: Rgb(0, 230, 255) })
        .collect();
    for (k, (p, t)) in u.phones.iter().zip(&u.timing).enumerate().skip(1) {
        markers.push(Marker { x: t.start, label: p.clone(), row: (k % 2) as u8, colour: Rgb(230, 30, 30) });
    }
    let map = Heatmap {
        title: u.id.clone(),
        x_label: "seconds (red: dv align, cyan: reference)".into(),
        y_label: "mel band".into(),
        columns: frames,
        rows: mfcc.config().n_mels,
        values: mfcc.last_log_mel(&scratch, frames).to_vec(),
        x_range: (0.0, frames as f64 * hop),
        y_range: (0.0, mfcc.config().n_mels as f64),
        markers,
    };
    let width = (400.0 + 500.0 * frames as f64 * hop).clamp(600.0, 4000.0) as u32;
    let png = map.render_png(width, 360)?;
    let dir = out.join("plots");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("{}.png", u.id));
    crate::write_atomic(&path, &png)?;
    Ok(path)
}

/// The merged phone sequence a pair-label sequence spells (`sil HH … sil`).
/// Each frame's mean log-mel level in dB from its MFCCs: the orthonormal
/// DCT's c0 is √n_mels × the mean of the log-mel bands (`dv_audio::Mfcc`).
fn mfcc_levels_db(mfcc: &[f32], frames: usize) -> Vec<f64> {
    let n_mels = dv_audio::MfccConfig::default().n_mels as f64;
    let coefficients = mfcc.len() / frames.max(1);
    mfcc.chunks_exact(coefficients.max(1)).map(|f| f[0] as f64 / n_mels.sqrt()).collect()
}

fn phones_of(labels: &[i64]) -> Vec<Phoneme> {
    let pairs: Vec<PhonemePair> =
        labels.iter().filter_map(|&l| usize::try_from(l - 1).ok().and_then(PhonemePair::from_index)).collect();
    let mut out: Vec<Phoneme> = pairs.first().map(|p| vec![p.0]).unwrap_or_default();
    out.extend(pairs.iter().map(|p| p.1));
    out
}

/// Loads the model a checkpoint holds, with the sizes of the run that wrote it.
fn load_model(path: &Path, device: tch::Device) -> anyhow::Result<(Segmentation, u64, RunConfig)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let name = path.display().to_string();
    let ck = decode(&name, &bytes)?;
    let cfg = RunConfig::from_toml(&format!("{name} (its run config)"), &ck.state.config)?;
    let sizes = cfg.segmentation_sizes(&name)?;
    if sizes.classes != PAIR_CLASSES {
        bail!(
            "{name}: the model has {} output classes; aligning needs a model trained on phoneme pairs ({PAIR_CLASSES})",
            sizes.classes
        );
    }
    let model = Segmentation::new(&sizes, device)?;
    dv_train::checkpoint::load_model_weights(&name, &ck, &model)?;
    Ok((model, ck.state.step, cfg))
}

/// Reference phone intervals from internal boundaries over `[0, duration]`.
fn intervals(bounds: &[f64], duration: f64) -> Vec<PhoneInterval> {
    let mut edges = vec![0.0];
    edges.extend_from_slice(bounds);
    edges.push(duration);
    edges.windows(2).map(|w| PhoneInterval { start: w[0], end: w[1] }).collect()
}

struct Aligned {
    id: String,
    phones: Vec<String>,
    timing: Vec<PhoneInterval>,
    confidence: f64,
}

/// The phoneme-pair edits and reference pairs of a batch's utterances (`flat`: `[b, t_max,
/// classes]` log-probabilities), each decoded by the CTC prefix beam search of width `beam`, the
/// utterances spread over every core.
fn pper_batch(
    data: &Features,
    chunk: &[usize],
    flat: &[f32],
    t_max: usize,
    classes: usize,
    beam: usize,
) -> anyhow::Result<(usize, usize)> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(chunk.len()).max(1);
    let per = chunk.len().div_ceil(threads);
    let parts: Vec<anyhow::Result<(usize, usize)>> = std::thread::scope(|s| {
        let handles: Vec<_> = chunk
            .chunks(per)
            .enumerate()
            .map(|(part, ids)| {
                s.spawn(move || -> anyhow::Result<(usize, usize)> {
                    let (mut edits, mut refs) = (0usize, 0usize);
                    for (j, &i) in ids.iter().enumerate() {
                        let b = part * per + j;
                        let frames = data.frames_of(i).unwrap_or(0);
                        let labels: Vec<u32> = data.labels(i).unwrap_or_default().iter().map(|&l| l as u32).collect();
                        let rows = &flat[b * t_max * classes..(b * t_max + frames) * classes];
                        let (decoded, _) = ctc_prefix_beam(rows, frames, classes, 0, beam, 16)?;
                        edits += edit_distance(&decoded, &labels);
                        refs += labels.len();
                    }
                    Ok((edits, refs))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a PPER thread panicked")))).collect()
    });
    parts.into_iter().try_fold((0, 0), |(e, r), p| p.map(|(pe, pr)| (e + pe, r + pr)))
}

pub(crate) fn run(a: AlignArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let device = dv_train::device_of(&a.device)?;
    if a.batch == 0 {
        bail!("--batch must be at least 1");
    }
    if !(a.trim_db.is_finite() && a.trim_db >= 0.0) {
        bail!("--trim-db {}: expected a level in dB, 0 or more", a.trim_db);
    }
    let (model, step, cfg) = load_model(&a.checkpoint, device)?;
    let (validation_fraction, seed) = match (&cfg.data, a.held_out) {
        (_, false) => (0.0, 0),
        (dv_train::DataConfig::Features(f), true) => (f.validation_fraction, f.seed),
        (_, true) => bail!("--held-out: {} was not trained on features", a.checkpoint.display()),
    };
    let split =
        Features::load(&FeaturesConfig { url: a.features.clone(), validation_fraction, seed, max_frames: None })?;
    let data = if a.held_out { split.validation } else { split.train };
    if data.is_empty() {
        bail!("{}: no utterance can be aligned ({})", a.features, split.skipped);
    }
    eprintln!(
        "aligning {} utterances ({:.1} min) with {} (step {step}); {}",
        data.len(),
        data.frames() as f64 * FRAME_SECONDS / 60.0,
        a.checkpoint.display(),
        split.skipped
    );
    for id in &a.plots {
        if !data.ids().contains(id) {
            bail!("--plot {id}: no such utterance among the {} to align", data.len());
        }
    }
    let tg_dir = a.out.join("textgrid");
    std::fs::create_dir_all(&tg_dir).with_context(|| format!("creating {}", tg_dir.display()))?;

    // Longest first in batches of similar length: little padding.
    let mut order: Vec<usize> = (0..data.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(data.frames_of(i).unwrap_or(0)));
    let classes = PAIR_CLASSES as usize;
    let mut aligned: Vec<Aligned> = Vec::with_capacity(data.len());
    let mut failed: Vec<(String, String)> = Vec::new();
    let mut errors = BoundaryErrors::new();
    let mut unscored = 0usize;
    let mut trimmed = 0usize;
    // `--decoder beam`: utterances whose decoded pairs differ from the reference (not scored).
    let mut different = 0usize;
    let gpu = match (a.decoder, a.viterbi, device) {
        (Decoder::Beam, _, _) | (_, ViterbiOn::Cpu, _) | (_, ViterbiOn::Auto, tch::Device::Cpu) => None,
        (_, ViterbiOn::Cuda, tch::Device::Cpu) => Some(dv_align::GpuAligner::new(0)?),
        (_, ViterbiOn::Cuda | ViterbiOn::Auto, tch::Device::Cuda(n)) => Some(dv_align::GpuAligner::new(n)?),
        (_, _, d) => bail!("--device {d:?}: not a CPU or CUDA device"),
    };
    if let Some(g) = &gpu {
        eprintln!("CTC Viterbi on {} (CUDA kernel, one launch per batch)", g.device_name());
    }
    let mut viterbi_s = 0.0f64;
    let (mut pair_edits, mut pair_refs) = (0usize, 0usize);
    for (k, chunk) in order.chunks(a.batch).enumerate() {
        let batch = data.batch(chunk, device)?;
        let lp = tch::no_grad(|| model.log_probs(&batch, false, 0))?; // [t, b, classes]
        let lp = lp.f_transpose(0, 1)?.f_contiguous()?.f_to_device(tch::Device::Cpu)?; // [b, t, classes]
        let t_max = lp.size()[1] as usize;
        let flat = Vec::<f32>::try_from(lp.f_reshape([-1])?)?;
        // The whole batch's Viterbi paths on the GPU, when asked; a batch the kernel refuses (an
        // utterance too short for its pairs, say) falls back to the CPU utterance by utterance,
        // where the bad one fails alone.
        let tv = Instant::now();
        let gpu_paths = match &gpu {
            Some(g) => {
                let all: Vec<Vec<u32>> = chunk
                    .iter()
                    .map(|&i| data.labels(i).unwrap_or_default().iter().map(|&l| l as u32).collect())
                    .collect();
                let l_max = all.iter().map(Vec::len).max().unwrap_or(0).max(1);
                let mut padded = vec![1u32; chunk.len() * l_max];
                for (b, l) in all.iter().enumerate() {
                    padded[b * l_max..b * l_max + l.len()].copy_from_slice(l);
                }
                let lens: Vec<dv_align::CtcLen> = chunk
                    .iter()
                    .zip(&all)
                    .map(|(&i, l)| dv_align::CtcLen { frames: data.frames_of(i).unwrap_or(0), labels: l.len() })
                    .collect();
                let shape = dv_align::CtcShape { batch: chunk.len(), frames: t_max, classes, labels: l_max };
                g.ctc_batch(&flat, shape, &padded, &lens, 0).ok()
            }
            None => None,
        };
        viterbi_s += tv.elapsed().as_secs_f64();
        // PPER: the prefix beam search is the slowest step here (about 0.1 s an utterance), so the
        // batch's utterances are decoded on every core at once.
        if a.pper_beam > 0 {
            let (edits, refs) = pper_batch(&data, chunk, &flat, t_max, classes, a.pper_beam)?;
            pair_edits += edits;
            pair_refs += refs;
        }
        for (b, &i) in chunk.iter().enumerate() {
            let id = data.ids()[i].clone();
            let frames = data.frames_of(i).unwrap_or(0);
            let labels: Vec<u32> = data.labels(i).unwrap_or_default().iter().map(|&l| l as u32).collect();
            let rows = &flat[b * t_max * classes..(b * t_max + frames) * classes];
            let duration = frames as f64 * FRAME_SECONDS;
            let reference_labels = labels.clone();
            let mut labels = labels;
            let timing = if a.decoder == Decoder::Beam {
                let pair = |c: u32| {
                    c.checked_sub(1)
                        .and_then(|k| PhonemePair::from_index(k as usize))
                        .map(|p| (p.0.index() as u16, p.1.index() as u16))
                };
                constrained_pair_beam(rows, frames, classes, 0, pair, a.beam_width, 16).and_then(|d| {
                    labels = d.labels;
                    phone_timing(&d.alignment, FRAME_SECONDS, duration)
                })
            } else {
                let tv = Instant::now();
                let path = match &gpu_paths {
                    Some(paths) => Ok(paths[b].clone()),
                    None => ctc_viterbi(rows, frames, classes, &labels, 0),
                };
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
            if a.trim_db > 0.0 {
                let levels = mfcc_levels_db(data.mfcc(i).unwrap_or_default(), frames);
                if let Some(extent) = speech_extent(&levels, FRAME_SECONDS, a.trim_db) {
                    let pause = |p: Option<&Phoneme>| p == Some(&Phoneme::Sil);
                    trimmed +=
                        clamp_edge_pauses(&mut timing.phones, pause(phonemes.first()), pause(phonemes.last()), extent);
                }
            }
            let phones: Vec<String> = phonemes.iter().map(|p| p.to_string()).collect();
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
            crate::write_atomic(&tg_dir.join(format!("{id}.TextGrid")), text.as_bytes())?;
            aligned.push(Aligned { id, phones, timing: timing.phones, confidence: timing.confidence });
        }
        let done = aligned.len() + failed.len();
        if k % 10 == 9 || done == data.len() {
            eprintln!("aligned {done}/{} utterances, {:.1} s", data.len(), started.elapsed().as_secs_f64());
        }
    }
    aligned.sort_by(|x, y| x.id.cmp(&y.id));
    if aligned.is_empty() {
        bail!("no utterance aligned: {failed:?}");
    }

    let conf: Vec<(String, f64)> = aligned.iter().map(|u| (u.id.clone(), u.confidence)).collect();
    // Judged against its peers: the segmentation model's training utterances, and those its run
    // held out (dv_align::quarantine_by_group).
    let seg_split = match &cfg.data {
        dv_train::DataConfig::Features(f) if !a.held_out && f.validation_fraction > 0.0 => {
            Some((f.validation_fraction, f.seed))
        }
        _ => None,
    };
    let unseen = |id: &String| seg_split.is_some_and(|(fraction, seed)| dv_train::is_validation(id, seed, fraction));
    let unseen_count = conf.iter().filter(|(id, _)| unseen(id)).count();
    let (q, q_unseen) = quarantine_by_group(&conf, unseen, a.quarantine_k)?;
    let mut tsv = String::from("id\tconfidence\n");
    for id in &q.ids {
        let c = conf.iter().find(|(i, _)| i == id).map(|(_, c)| *c).unwrap_or(f64::NAN);
        tsv.push_str(&format!("{id}\t{c:.4}\n"));
    }
    crate::write_atomic(&a.out.join("quarantine.tsv"), tsv.as_bytes())?;

    let list = |f: &dyn Fn(&Aligned) -> Series| -> anyhow::Result<Column> {
        let rows: Vec<Series> = aligned.iter().map(f).collect();
        Ok(Series::new("".into(), rows).into_column())
    };
    let mut df = DataFrame::new(
        aligned.len(),
        vec![
            Column::new("id".into(), aligned.iter().map(|u| u.id.as_str()).collect::<Vec<_>>()),
            list(&|u| Series::new("".into(), u.phones.clone()))?.with_name("phones".into()),
            list(&|u| Series::new("".into(), u.timing.iter().map(|t| t.start).collect::<Vec<f64>>()))?
                .with_name("starts".into()),
            list(&|u| Series::new("".into(), u.timing.iter().map(|t| t.end).collect::<Vec<f64>>()))?
                .with_name("ends".into()),
            Column::new("confidence".into(), aligned.iter().map(|u| u.confidence).collect::<Vec<f64>>()),
            Column::new("quarantined".into(), aligned.iter().map(|u| q.ids.contains(&u.id)).collect::<Vec<bool>>()),
        ],
    )?;
    dv_manifest::write_parquet(&mut df, &a.out.join("alignments.parquet"))?;

    let summary = errors.summary();
    let report = json!({
        "checkpoint": a.checkpoint.display().to_string(),
        "checkpoint_step": step,
        "features": a.features,
        "utterances": data.len(),
        "held_out": a.held_out,
        "aligned": aligned.len(),
        "failed": failed.iter().map(|(id, why)| json!({"id": id, "reason": why})).collect::<Vec<_>>(),
        "skipped_by_loader": split.skipped.to_string(),
        "confidence_median": q.median,
        "quarantine": {"k": a.quarantine_k, "spread": q.spread, "threshold": q.threshold, "ids": q.ids,
            "held_out_by_segmentation": q_unseen.as_ref().map(|u| json!({
                "utterances": unseen_count, "median": u.median, "spread": u.spread, "threshold": u.threshold,
                "quarantined": u.ids.len(),
            }))},
        "boundary_error": summary.as_ref().map(|s| json!({
            "utterances": s.utterances, "boundaries": s.boundaries, "mean_abs_ms": s.mean_abs_ms, "mean_signed_ms": s.mean_signed_ms,
            "max_abs_ms": s.max_abs_ms, "within_10ms": s.within_10ms, "within_20ms": s.within_20ms,
            "within_25ms": s.within_25ms,
        })),
        "without_reference": unscored,
        "decoder": a.decoder.name(),
        "trim_db": a.trim_db,
        "edge_boundaries_trimmed": trimmed,
        "viterbi": if gpu.is_some() { "cuda" } else { "cpu" },
        "viterbi_seconds": viterbi_s,
        "decoded_other_pairs": different,
        "pper": (a.pper_beam > 0 && pair_refs > 0).then(|| json!({
            "beam": a.pper_beam, "error_rate": pair_edits as f64 / pair_refs as f64, "edits": pair_edits,
            "reference_pairs": pair_refs,
        })),
        "seconds": started.elapsed().as_secs_f64(),
    });
    crate::write_atomic(&a.out.join("report.json"), serde_json::to_string_pretty(&report)?.as_bytes())?;

    println!("aligned        {} of {} utterances ({} failed)", aligned.len(), data.len(), failed.len());
    for (id, why) in failed.iter().take(5) {
        println!("  failed       {id}: {why}");
    }
    println!("confidence     median {:.3} (mean log-likelihood per frame)", q.median);
    println!("quarantined    {} below {:.3}: {}", q.ids.len(), q.threshold, q.ids.join(" "));
    match summary {
        Some(s) => println!(
            "boundaries     {} in {} utterances vs reference: mean |error| {:.1} ms (mean shift {:+.1} ms), within 10/20/25 ms {:.1}% / {:.1}% / {:.1}%",
            s.boundaries,
            s.utterances,
            s.mean_abs_ms,
            s.mean_signed_ms,
            100.0 * s.within_10ms,
            100.0 * s.within_20ms,
            100.0 * s.within_25ms
        ),
        None => println!("boundaries     no reference boundaries to compare with"),
    }
    if a.decoder == Decoder::Viterbi {
        println!(
            "viterbi        {} s on the {}",
            format_args!("{viterbi_s:.3}"),
            if gpu.is_some() { "GPU" } else { "CPU" }
        );
    }
    if a.decoder == Decoder::Beam {
        println!("decoder        beam of {} over chained pairs: {different} utterance(s) decoded other pairs than the reference (their boundaries are not scored)", a.beam_width);
    }
    if a.pper_beam > 0 && pair_refs > 0 {
        println!(
            "PPER           {:.2}% ({pair_edits} edits in {pair_refs} reference pairs; CTC prefix beam search, width {})",
            100.0 * pair_edits as f64 / pair_refs as f64,
            a.pper_beam
        );
    }
    for id in &a.plots {
        let Some(u) = aligned.iter().find(|u| &u.id == id) else {
            println!("plot           {id}: not aligned (see the failures above)");
            continue;
        };
        let index = data.ids().iter().position(|x| x == id);
        let path = plot(&a.out, &a.features, u, index.and_then(|i| data.reference_boundaries(i)))?;
        println!("plot           {}", path.display());
    }
    println!("output         {} ({:.1} s)", a.out.display(), started.elapsed().as_secs_f64());
    Ok(())
}
