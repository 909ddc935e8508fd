//! The training loop every model shares, for one rank, and the launcher
//! that runs ranks as threads with the in-process collective.
//!
//! Per step: the rank's slice of the global batch → sum of example losses ÷
//! global batch → backward → gradients summed over ranks, in one flat
//! buffer with the loss sum riding along ([`FlatParams`]) or in buckets
//! (equal to the gradient of the global batch's mean loss, whatever the rank
//! count) → optional clipping → Adam at the annealed learning rate. Rank 0
//! logs, validates, tracks and checkpoints; at start it loads the newest
//! checkpoint that verifies and broadcasts parameters, Adam's moments and
//! the step to the others.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dv_store::Store;
use tch::{Device, Kind, Tensor};

use crate::checkpoint::{code_version, decode, encode, step_name, steps_present, CheckpointState};
use crate::chunks::Chunks;
use crate::collective::{Collective, LocalCollective};
use crate::config::{DataConfig, InitConfig, ModelConfig, RunConfig};
use crate::data::{Dataset, Synthetic, SyntheticConfig};
use crate::duration::DurationModel;
use crate::features::{Features, FRAME_SECONDS};
use crate::g2p::G2p;
use crate::mlflow::MlflowRun;
use crate::model::Model;
use crate::optim::{clip_grad_norm, Adam, FlatParams};
use crate::prefetch::{Batches, Plan};
use crate::pronunciation::Pronunciations;
use crate::prosody::Prosody;
use crate::sampler::{splitmix64, Sampler};
use crate::segmentation::Segmentation;
use crate::tracking::Tracker;
use crate::wavenet::Wavenet;
use crate::TrainError;

/// Gradients are all-reduced in flat buckets of at most this many floats (4 MiB).
pub const BUCKET_FLOATS: usize = 1 << 20;

/// What a finished run reports.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    pub start_step: u64,
    pub steps: u64,
    pub final_loss: f64,
    pub best_validation: Option<f64>,
    /// Checkpoints that failed to verify and were skipped, with the reason.
    pub skipped_checkpoints: Vec<String>,
    pub mlflow_run_id: Option<String>,
    pub seconds: f64,
}

/// Progress lines go here (rank 0 only).
pub type Log<'a> = &'a mut (dyn FnMut(&str) + Send);

/// The device a `[train] device` string names (`cpu`, `cuda`, `cuda:N`).
pub fn device_of(name: &str) -> Result<Device, TrainError> {
    match name {
        "cpu" => Ok(Device::Cpu),
        "cuda" => Ok(Device::cuda_if_available()),
        d => match d.strip_prefix("cuda:").and_then(|i| i.parse().ok()) {
            Some(i) => Ok(Device::Cuda(i)),
            None => Err(TrainError::Config { path: "[train] device".into(), reason: format!("unknown device {d:?}") }),
        },
    }
}

/// The training set and the optional held-out set.
type Datasets = (Box<dyn Dataset>, Option<Box<dyn Dataset>>);

/// The datasets of `cfg`, and lines for rank 0 to log about them.
fn build_data(cfg: &RunConfig) -> Result<(Datasets, Vec<String>), TrainError> {
    match &cfg.data {
        DataConfig::Synthetic { data, validation_examples } => {
            let train = Box::new(Synthetic::new(data)?);
            let val: Option<Box<dyn Dataset>> = if *validation_examples > 0 {
                // Same classes and means, different examples: a held-out set.
                let v = SyntheticConfig { examples: *validation_examples, ..data.clone() };
                Some(Box::new(ValidationSlice { inner: Synthetic::new(&v)?, offset: data.examples }))
            } else {
                None
            };
            Ok(((train, val), Vec::new()))
        }
        DataConfig::Lexicon(c) => {
            let split = Pronunciations::load(c)?;
            let notes = vec![format!(
                "lexicon: {} training words, {} dev, {} test (held out), {} skipped for letters outside the grapheme set",
                split.train.len(),
                split.dev.len(),
                split.test.len(),
                split.skipped
            )];
            let val: Option<Box<dyn Dataset>> = if split.dev.is_empty() { None } else { Some(Box::new(split.dev)) };
            Ok(((Box::new(split.train), val), notes))
        }
        DataConfig::Prosody(c) => {
            let k = cfg.duration_sizes("[model]")?.f0_points as usize;
            let split = Prosody::load(c, k)?;
            let notes = vec![format!(
                "prosody {}: {} training utterances, {} validation; {}",
                c.url,
                split.train.len(),
                split.validation.len(),
                split.skipped
            )];
            if split.train.len() < cfg.train.batch {
                return Err(TrainError::Config {
                    path: "[data] url".into(),
                    reason: format!(
                        "{} has {} training utterances, fewer than one batch of {}",
                        c.url,
                        split.train.len(),
                        cfg.train.batch
                    ),
                });
            }
            let val: Option<Box<dyn Dataset>> =
                if split.validation.is_empty() { None } else { Some(Box::new(split.validation)) };
            Ok(((Box::new(split.train), val), notes))
        }
        DataConfig::Chunks(c) => {
            let hop = cfg.wavenet_sizes("[model]")?.hop as usize;
            let split = Chunks::load(c, hop)?;
            let notes = vec![format!(
                "chunks {}: {} shards, {} utterances, {} training chunks ({:.1} min of targets), {} validation; \
                 F0 normalization {:.1}-{:.1} Hz; {}",
                c.url,
                split.shards,
                split.utterances,
                split.train.len(),
                split.train.target_seconds() / 60.0,
                split.validation.len(),
                split.train.norm.min_hz,
                split.train.norm.max_hz,
                split.skipped
            )];
            if split.train.len() < cfg.train.batch {
                return Err(TrainError::Config {
                    path: "[data] url".into(),
                    reason: format!(
                        "{} has {} training chunks, fewer than one batch of {}",
                        c.url,
                        split.train.len(),
                        cfg.train.batch
                    ),
                });
            }
            let val: Option<Box<dyn Dataset>> =
                if split.validation.is_empty() { None } else { Some(Box::new(split.validation)) };
            Ok(((Box::new(split.train), val), notes))
        }
        DataConfig::Features(f) => {
            let split = Features::load(f)?;
            let mut notes = vec![format!(
                "features {}: {} shards, {} training utterances ({:.1} min), {} validation; {}",
                f.url,
                split.shards,
                split.train.len(),
                split.train.frames() as f64 * FRAME_SECONDS / 60.0,
                split.validation.len(),
                split.skipped
            )];
            if !split.complete {
                notes.push(format!(
                    "warning: {} has no manifest.json: featurize has not finished, training on the shards present",
                    f.url
                ));
            }
            if split.train.len() < cfg.train.batch {
                return Err(TrainError::Config {
                    path: "[data] url".into(),
                    reason: format!(
                        "{} has {} usable training utterances, fewer than one batch of {} ({})",
                        f.url,
                        split.train.len(),
                        cfg.train.batch,
                        split.skipped
                    ),
                });
            }
            let val: Option<Box<dyn Dataset>> =
                if split.validation.is_empty() { None } else { Some(Box::new(split.validation)) };
            Ok(((Box::new(split.train), val), notes))
        }
    }
}

/// Examples `offset..` of the same generator, never seen in training.
struct ValidationSlice {
    inner: Synthetic,
    offset: usize,
}

impl Dataset for ValidationSlice {
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn batch(&self, indices: &[usize], device: Device) -> Result<crate::Batch, TrainError> {
        let shifted: Vec<usize> = indices.iter().map(|i| i + self.offset).collect();
        self.inner.batch(&shifted, device)
    }
}

fn build_model(cfg: &RunConfig, device: Device) -> Result<Box<dyn Model>, TrainError> {
    match cfg.model {
        ModelConfig::Segmentation { .. } => {
            Ok(Box::new(Segmentation::new(&cfg.segmentation_sizes("[model]")?, device)?))
        }
        ModelConfig::Wavenet { .. } => Ok(Box::new(Wavenet::new(&cfg.wavenet_sizes("[model]")?, device)?)),
        ModelConfig::Duration { .. } => Ok(Box::new(DurationModel::new(&cfg.duration_sizes("[model]")?, device)?)),
        ModelConfig::G2p { .. } => Ok(Box::new(G2p::new(&cfg.g2p_sizes("[model]")?, device)?)),
    }
}

/// Sums tensors over ranks in flat buckets of at most [`BUCKET_FLOATS`].
fn all_reduce_buckets(coll: &mut dyn Collective, tensors: &[Tensor], what: &str) -> Result<(), TrainError> {
    let mut start = 0;
    let mut bucket = 0;
    while start < tensors.len() {
        let mut end = start;
        let mut floats = 0;
        while end < tensors.len() && (end == start || floats + tensors[end].numel() <= BUCKET_FLOATS) {
            floats += tensors[end].numel();
            end += 1;
        }
        let flat: Vec<Tensor> = tensors[start..end].iter().map(|t| t.f_reshape([-1])).collect::<Result<_, _>>()?;
        let mut flat = Tensor::f_cat(&flat, 0)?;
        coll.all_reduce_sum(&mut flat, &format!("{what}[{bucket}]"))?;
        let mut off = 0;
        tch::no_grad(|| -> Result<(), TrainError> {
            for t in &tensors[start..end] {
                let n = t.numel() as i64;
                let mut dst = t.shallow_clone();
                dst.f_copy_(&flat.f_narrow(0, off, n)?.f_view(t.size().as_slice())?)?;
                off += n;
            }
            Ok(())
        })?;
        start = end;
        bucket += 1;
    }
    Ok(())
}

/// Copies rank `root`'s tensors to every rank, bucketed.
fn broadcast_buckets(coll: &mut dyn Collective, tensors: &[Tensor], what: &str) -> Result<(), TrainError> {
    for (k, t) in tensors.iter().enumerate() {
        let mut t = t.shallow_clone();
        tch::no_grad(|| coll.broadcast(&mut t, 0, &format!("{what}[{k}]")))?;
    }
    Ok(())
}

/// Rank 0's storage and tracking.
pub struct Lead<'a> {
    pub store: Store,
    pub tracker: Tracker,
    pub log: Log<'a>,
    pub rt: tokio::runtime::Runtime,
}

impl<'a> Lead<'a> {
    /// Opens the checkpoint location; tracking starts inside the run.
    pub fn open(cfg: &RunConfig, log: Log<'a>) -> Result<Lead<'a>, TrainError> {
        let store = Store::open(&cfg.checkpoint.url)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| TrainError::Tracking(format!("tokio runtime: {e}")))?;
        Ok(Lead { store, tracker: Tracker::default(), log, rt })
    }
}

/// Wall time per phase of a step, when `[train] profile` is on: the device
/// is synchronised at each boundary so that asynchronous GPU work is charged
/// to the phase that queued it.
struct Phases {
    device: Option<Device>,
    last: Instant,
    ms: [f64; 4],
}

const PHASES: [&str; 4] = ["data", "fwd+bwd", "allreduce", "optim"];

impl Phases {
    fn new(on: bool, device: Device) -> Phases {
        Phases { device: on.then_some(device), last: Instant::now(), ms: [0.0; 4] }
    }

    fn mark(&mut self, phase: usize) {
        let Some(device) = self.device else { return };
        if let Device::Cuda(i) = device {
            tch::Cuda::synchronize(i as i64);
        }
        let now = Instant::now();
        self.ms[phase] += (now - self.last).as_secs_f64() * 1e3;
        self.last = now;
    }

    /// `" [data 1.2 fwd+bwd 30.0 … ms/step]"` over `steps` steps, then reset.
    fn report(&mut self, steps: usize) -> String {
        if self.device.is_none() || steps == 0 {
            return String::new();
        }
        let parts: Vec<String> =
            PHASES.iter().zip(self.ms).map(|(n, v)| format!("{n} {:.1}", v / steps as f64)).collect();
        self.ms = [0.0; 4];
        format!(" [{} ms/step]", parts.join(" "))
    }
}

/// Loads the newest checkpoint that verifies; corrupt ones are reported and skipped.
fn load_latest(lead: &mut Lead<'_>, skipped: &mut Vec<String>) -> Result<Option<crate::CheckpointData>, TrainError> {
    let names = lead.rt.block_on(lead.store.list(""))?;
    for step in steps_present(&names) {
        let name = step_name(step);
        let bytes = lead.rt.block_on(lead.store.get(&name))?;
        match decode(&format!("{}/{name}", lead.store.url()), &bytes) {
            Ok(c) => return Ok(Some(c)),
            Err(e) => {
                (lead.log)(&format!("warning: {e}; falling back to the previous checkpoint"));
                skipped.push(e.to_string());
            }
        }
    }
    Ok(None)
}

/// Rank 0 copies `[init] from`'s weights into a new run's model (the other
/// ranks receive them with the initial parameter broadcast).
fn init_from(lead: &mut Lead<'_>, init: &InitConfig, model: &dyn Model) -> Result<(), TrainError> {
    let from = init.from.trim_end_matches('/');
    let (dir, file) = match from.rsplit_once('/') {
        Some((dir, file)) if file.ends_with(".safetensors") => (dir, file),
        None if from.ends_with(".safetensors") => (".", from),
        _ => (from, "model.safetensors"),
    };
    let name = format!("{dir}/{file}");
    let bytes = if dir.contains("://") {
        lead.rt.block_on(Store::open(dir)?.get(file))?
    } else {
        std::fs::read(&name).map_err(|e| TrainError::Checkpoint { name: name.clone(), reason: format!("[init] from: {e}") })?
    };
    let weights = crate::checkpoint::init_weights(&name, &bytes)?;
    let values = crate::checkpoint::copy_weights(&name, model, |n| weights.get(n))?;
    let tensors = model.named_parameters().len();
    (lead.log)(&format!(
        "initialised {tensors} tensors ({values} weights) from {name}; Adam's moments, the step and the schedule start afresh"
    ));
    Ok(())
}

fn checkpoint_tensors(named: &[(String, Tensor)], adam: &Adam) -> Vec<(String, Tensor)> {
    let mut out = Vec::with_capacity(3 * named.len());
    for (k, (name, p)) in named.iter().enumerate() {
        out.push((format!("model.{name}"), p.shallow_clone()));
        out.push((format!("adam.m.{name}"), adam.m[k].shallow_clone()));
        out.push((format!("adam.v.{name}"), adam.v[k].shallow_clone()));
    }
    out
}

/// Mean loss over a dataset, every rank taking a share of each batch.
fn validate(
    model: &dyn Model,
    data: &dyn Dataset,
    batch: usize,
    coll: &mut dyn Collective,
    device: Device,
    seed: u64,
) -> Result<f64, TrainError> {
    let (rank, world) = (coll.rank(), coll.world_size());
    let mut sum = Tensor::from_slice(&[0.0f32]);
    let mut start = 0;
    while start < data.len() {
        let end = (start + batch).min(data.len());
        let mine: Vec<usize> = (start..end).filter(|i| i % world == rank).collect();
        if !mine.is_empty() {
            let b = data.batch(&mine, device)?;
            let l = tch::no_grad(|| model.loss_sum(&b, false, seed))?;
            sum = sum.f_add(&l.f_to_device(Device::Cpu)?.f_to_kind(Kind::Float)?)?;
        }
        start = end;
    }
    coll.all_reduce_sum(&mut sum, "validation loss")?;
    Ok(sum.double_value(&[0]) / data.len() as f64)
}

/// Trains on one rank on `device`. `lead` is `Some` on rank 0 only.
pub fn train_rank(
    cfg: &RunConfig,
    coll: &mut dyn Collective,
    device: Device,
    mut lead: Option<Lead<'_>>,
) -> Result<RunSummary, TrainError> {
    let started = Instant::now();
    let (rank, world) = (coll.rank(), coll.world_size());
    let t = &cfg.train;
    if !t.batch.is_multiple_of(world) {
        return Err(TrainError::Config {
            path: "[train] batch".into(),
            reason: format!("global batch {} does not split equally among {world} ranks", t.batch),
        });
    }
    let config_toml = cfg.to_toml()?;
    let ((data, val), notes) = build_data(cfg)?;
    if let Some(lead) = lead.as_mut() {
        for n in &notes {
            (lead.log)(n);
        }
    }
    let model = crate::model::with_rng(splitmix64(t.seed), || build_model(cfg, device))?;
    let named = model.named_parameters();
    let params: Vec<Tensor> = named.iter().map(|(_, p)| p.shallow_clone()).collect();
    // Flat buffers when it can (then the step's loss sum and audio seconds
    // ride in the gradient all-reduce's two extra floats).
    // `DV_TRAIN_FLAT=0` keeps the per-parameter path (to compare the two).
    let flat = match std::env::var("DV_TRAIN_FLAT").as_deref() {
        Ok("0") => None,
        _ => FlatParams::new(&params, 3)?, // extra: loss sum, audio seconds, stop
    };
    let mut adam = Adam::new(cfg.optimizer, &params)?;
    let mut summary = RunSummary::default();
    let mut best: Option<f64> = None;
    let mut mlflow_run_id: Option<String> = None;

    // Rank 0 restores; everyone receives rank 0's state.
    let mut start_step = 0u64;
    if let Some(lead) = lead.as_mut() {
        let latest = load_latest(lead, &mut summary.skipped_checkpoints)?;
        if let (None, Some(init)) = (&latest, &cfg.init) {
            init_from(lead, init, model.as_ref())?;
        }
        if let Some(c) = latest {
            tch::no_grad(|| -> Result<(), TrainError> {
                for (k, (name, p)) in named.iter().enumerate() {
                    let get = |prefix: &str| {
                        c.tensors.get(&format!("{prefix}{name}")).ok_or_else(|| TrainError::Checkpoint {
                            name: step_name(c.state.step),
                            reason: format!("no tensor {prefix}{name}: the checkpoint is from another model"),
                        })
                    };
                    let mut p = p.shallow_clone();
                    p.f_copy_(get("model.")?)?;
                    adam.m[k].f_copy_(get("adam.m.")?)?;
                    adam.v[k].f_copy_(get("adam.v.")?)?;
                }
                Ok(())
            })?;
            adam.step = c.state.adam_step;
            start_step = c.state.step;
            best = c.state.best;
            mlflow_run_id = c.state.mlflow_run_id.clone();
            (lead.log)(&format!("resumed from {}/{} (step {start_step})", lead.store.url(), step_name(start_step)));
        }
    }
    let mut head = Tensor::from_slice(&[start_step as f32, adam.step as f32]);
    coll.broadcast(&mut head, 0, "resume step")?;
    start_step = head.double_value(&[0]) as u64;
    adam.step = head.double_value(&[1]) as u64;
    broadcast_buckets(coll, &params, "params")?;
    if start_step > 0 {
        broadcast_buckets(coll, &adam.m, "adam.m")?;
        broadcast_buckets(coll, &adam.v, "adam.v")?;
    }
    summary.start_step = start_step;

    // Tracking starts after the resume point is known, so a resumed run
    // continues its MLflow run.
    if let Some(lead) = lead.as_mut() {
        let uri = cfg.tracking.mlflow.clone().or_else(|| std::env::var("MLFLOW_TRACKING_URI").ok());
        let mlflow = match uri {
            Some(u) => {
                let exp = cfg.tracking.experiment.as_deref().unwrap_or("deepvoice");
                let name = cfg.tracking.run_name.as_deref().unwrap_or("train");
                Some(MlflowRun::start(&u, exp, name, mlflow_run_id.as_deref())?)
            }
            None => None,
        };
        lead.tracker = Tracker::open(cfg.tracking.jsonl.as_deref(), mlflow)?;
        mlflow_run_id = lead.tracker.mlflow_run_id().map(str::to_string);
        if start_step == 0 {
            let mut ps = vec![
                ("world_size".to_string(), world.to_string()),
                ("code_version".to_string(), code_version()),
                ("parameters".to_string(), params.iter().map(|p| p.numel()).sum::<usize>().to_string()),
            ];
            ps.extend(flat_params(&config_toml));
            lead.tracker.params(&ps)?;
            lead.tracker.artifact("config.toml", config_toml.as_bytes())?;
        }
    }

    let sampler = Sampler { len: data.len(), batch: t.batch, seed: t.seed };
    let buckets = (t.bucket_batches > 0).then(|| crate::sampler::Buckets {
        window_batches: t.bucket_batches,
        lengths: (0..data.len()).map(|i| data.length(i)).collect(),
    });
    let plan = Plan { sampler, buckets, rank, world };
    let prefetch = t.prefetch.unwrap_or(if device == Device::Cpu { 0 } else { 2 }); // `[train] prefetch` docs
    let mut batches = Batches::new(Arc::from(data), plan, start_step..t.steps, prefetch, device);
    let mut last_loss = f64::NAN;
    let (mut window_samples, mut window_audio, mut window_start) = (0usize, 0.0f64, Instant::now());
    let mut phases = Phases::new(t.profile, device);
    for step in start_step..t.steps {
        phases.mark(3);
        let lr = cfg.schedule.lr(cfg.optimizer.lr, step);
        let batch = batches.get(step)?;
        phases.mark(0);
        match &flat {
            Some(f) => {
                let _ = tch::no_grad(|| f.grads_and_extra.shallow_clone().f_zero_())?;
            }
            None => {
                for p in &params {
                    let mut g = p.grad();
                    if g.defined() {
                        let _ = tch::no_grad(|| g.f_zero_())?;
                    }
                }
            }
        }
        let seed = splitmix64(t.seed ^ splitmix64(step ^ 0x64726f70));
        let loss_sum = model.loss_sum(&batch, true, seed)?;
        loss_sum.f_div_scalar(t.batch as f64)?.f_backward()?;
        phases.mark(1);
        let audio_seconds = batch.audio_seconds.unwrap_or(0.0);
        // Rank 0's stop request, summed with the loss so that every rank sees it (crate::stop).
        let stop_vote = if rank == 0 && crate::stop::stop_requested() { 1.0 } else { 0.0 };
        match &flat {
            // One collective, no host round trip before it: the gradients and the three numbers.
            Some(f) => {
                tch::no_grad(|| -> Result<(), TrainError> {
                    let extra = f.extra()?;
                    extra.f_narrow(0, 0, 1)?.f_copy_(&loss_sum.f_detach()?.f_to_kind(Kind::Float)?.f_reshape([1])?)?;
                    let _ = extra.f_narrow(0, 1, 1)?.f_fill_(audio_seconds)?;
                    let _ = extra.f_narrow(0, 2, 1)?.f_fill_(stop_vote)?;
                    Ok(())
                })?;
                if world > 1 {
                    coll.all_reduce_sum(&mut f.grads_and_extra.shallow_clone(), "grads")?;
                }
            }
            None => {
                if world > 1 {
                    let grads: Vec<Tensor> = params
                        .iter()
                        .map(|p| if p.grad().defined() { Ok(p.grad()) } else { p.f_zeros_like() })
                        .collect::<Result<_, _>>()?;
                    all_reduce_buckets(coll, &grads, "grads")?;
                }
            }
        }
        phases.mark(2);
        let grad_norm = match (cfg.optimizer.clip_norm, &flat) {
            (Some(max), Some(f)) => f.clip_grad_norm(max)?,
            (Some(max), None) => clip_grad_norm(&params, max)?,
            (None, _) => f64::NAN,
        };
        match &flat {
            Some(f) => adam.step_flat(f, lr)?,
            None => adam.step(&params, lr)?,
        }
        // The loss is read after Adam's kernels are queued.
        let stats = match &flat {
            Some(f) => f.extra()?.f_to_device(Device::Cpu)?,
            None => {
                let mut stats = Tensor::from_slice(&[
                    loss_sum.f_to_device(Device::Cpu)?.double_value(&[]) as f32,
                    audio_seconds as f32,
                    stop_vote as f32,
                ]);
                coll.all_reduce_sum(&mut stats, "loss")?;
                stats
            }
        };
        let loss = stats.double_value(&[0]) / t.batch as f64;
        if !loss.is_finite() {
            return Err(TrainError::NonFiniteLoss { step, loss });
        }
        last_loss = loss;
        window_samples += t.batch;
        window_audio += stats.double_value(&[1]);
        let done = step + 1;
        let stop = stats.double_value(&[2]) > 0.0 && done < t.steps;

        let mut val_loss = None;
        if t.validate_every > 0 && (done % t.validate_every == 0 || done == t.steps) {
            if let Some(v) = &val {
                val_loss = Some(validate(model.as_ref(), v.as_ref(), t.batch, coll, device, 0)?);
            }
        }
        if let Some(lead) = lead.as_mut() {
            if done % t.log_every == 0 || done == t.steps || val_loss.is_some() {
                let secs = window_start.elapsed().as_secs_f64().max(1e-9);
                let (sps, aps) = (window_samples as f64 / secs, window_audio / secs);
                let eta = (t.steps - done) as f64 * secs / (window_samples / t.batch).max(1) as f64;
                let mut m = vec![("loss", loss), ("lr", lr), ("samples_per_s", sps), ("audio_s_per_s", aps)];
                if grad_norm.is_finite() {
                    m.push(("grad_norm", grad_norm));
                }
                if let Some(v) = val_loss {
                    m.push(("val_loss", v));
                }
                lead.tracker.metrics(done, &m)?;
                let val_text = val_loss.map(|v| format!(" val {v:.4}")).unwrap_or_default();
                let prof = phases.report(window_samples / t.batch);
                (lead.log)(&format!(
                    "step {done}/{} loss {loss:.4}{val_text} lr {lr:.3e} {sps:.1} samples/s {aps:.1} audio-s/s ETA {eta:.0} s{prof}",
                    t.steps
                ));
                (window_samples, window_audio, window_start) = (0, 0.0, Instant::now());
            }
            let improved = val_loss.is_some_and(|v| best.is_none_or(|b| v < b));
            if improved {
                best = val_loss;
            }
            let state = |step: u64| CheckpointState {
                step,
                adam_step: adam.step,
                best,
                config: config_toml.clone(),
                code_version: code_version(),
                seed: t.seed,
                mlflow_run_id: mlflow_run_id.clone(),
            };
            if done % cfg.checkpoint.every == 0 || done == t.steps || improved || stop {
                let bytes = encode(&state(done), &checkpoint_tensors(&named, &adam))?;
                if done % cfg.checkpoint.every == 0 || done == t.steps || stop {
                    lead.rt.block_on(lead.store.put(&step_name(done), bytes.clone()))?;
                    let names = lead.rt.block_on(lead.store.list(""))?;
                    for old in steps_present(&names).into_iter().skip(cfg.checkpoint.keep_last) {
                        lead.rt.block_on(lead.store.delete(&step_name(old)))?;
                    }
                }
                if improved {
                    lead.rt.block_on(lead.store.put("best.safetensors", bytes.clone()))?;
                }
                if done == t.steps {
                    lead.tracker.artifact("checkpoint/final.safetensors", &bytes)?;
                }
            }
            if stop {
                (lead.log)(&format!("stop requested: stopped after step {done}, checkpoint {}", step_name(done)));
            }
        }
        if stop {
            if world > 1 {
                // No rank leaves before rank 0 has written the checkpoint: under srun
                // --kill-on-bad-exit the first exit would kill rank 0 mid-write.
                coll.all_reduce_sum(&mut Tensor::f_zeros([1], (Kind::Float, device))?, "stop")?;
            }
            return Err(TrainError::Stopped { step: done });
        }
    }
    summary.steps = t.steps;
    summary.final_loss = last_loss;
    summary.best_validation = best;
    summary.mlflow_run_id = mlflow_run_id;
    summary.seconds = started.elapsed().as_secs_f64();
    if let Some(lead) = lead.as_mut() {
        if let Some(path) = &cfg.tracking.jsonl {
            if let Ok(bytes) = std::fs::read(path) {
                lead.tracker.artifact("metrics.jsonl", &bytes)?;
                // A chart is a convenience: a run with no drawable loss still finishes.
                let chart = crate::tracking::loss_chart(&String::from_utf8_lossy(&bytes), "training loss");
                if let Ok(png) = chart.render_png(800, 480) {
                    lead.tracker.artifact("plots/loss.png", &png)?;
                }
            }
        }
        lead.tracker.finish(true)?;
    }
    Ok(summary)
}

/// The config's scalar values as dotted MLflow params (`train.batch` = `16`).
fn flat_params(toml_text: &str) -> Vec<(String, String)> {
    fn walk(prefix: &str, v: &toml::Value, out: &mut Vec<(String, String)>) {
        match v {
            toml::Value::Table(t) => {
                for (k, v) in t {
                    let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    walk(&key, v, out);
                }
            }
            other => out.push((prefix.to_string(), other.to_string().trim_matches('"').to_string())),
        }
    }
    let mut out = Vec::new();
    if let Ok(t) = toml_text.parse::<toml::Table>() {
        walk("", &toml::Value::Table(t), &mut out);
    }
    out
}

/// Runs `ranks` ranks as threads of this process on the CPU (or the
/// configured device), rank 0 logging through `log`.
pub fn train_threads(cfg: &RunConfig, ranks: usize, log: Log<'_>) -> Result<RunSummary, TrainError> {
    if ranks == 0 {
        return Err(TrainError::Config { path: "--ranks".into(), reason: "at least one rank".into() });
    }
    let lead = Lead::open(cfg, log)?;
    // Each rank thread sets its own intra-op thread count (OpenMP's is per
    // thread); a fixed count keeps CPU runs bitwise reproducible.
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let per_rank = cfg.train.threads_per_rank.unwrap_or(cores / ranks).max(1) as i32;
    let timeout = Duration::from_secs_f64(cfg.train.collective_timeout_s);
    let handles = LocalCollective::group(ranks, timeout);
    std::thread::scope(|s| {
        let mut lead = Some(lead);
        let joins: Vec<_> = handles
            .into_iter()
            .map(|mut coll| {
                let lead = if coll.rank() == 0 { lead.take() } else { None };
                s.spawn(move || {
                    tch::set_num_threads(per_rank);
                    let r = device_of(&cfg.train.device).and_then(|d| train_rank(cfg, &mut coll, d, lead));
                    match &r {
                        Ok(_) => coll.finish(),
                        Err(e) => coll.abort(&e.to_string()),
                    }
                    r
                })
            })
            .collect();
        let results: Vec<Result<RunSummary, TrainError>> = joins
            .into_iter()
            .enumerate()
            .map(|(rank, j)| {
                j.join().unwrap_or_else(|p| {
                    let message = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    Err(TrainError::Panicked { rank, message })
                })
            })
            .collect();
        // The root cause: the first error that is not another rank's failure echoed.
        let echo = |r: &Result<RunSummary, TrainError>| {
            matches!(r, Err(TrainError::Collective(crate::CollectiveError::PeerFailed { .. })))
        };
        let mut results = results;
        if let Some(k) = results.iter().position(|r| r.is_err() && !echo(r)) {
            return results.swap_remove(k);
        }
        if let Some(k) = results.iter().position(|r| r.is_err()) {
            return results.swap_remove(k);
        }
        results.swap_remove(0)
    })
}
