//! One rank's run: the model it trains, the restore and broadcast at start,
//! and the step loop (rank 0 also validates, logs, tracks and checkpoints).

use std::sync::Arc;
use std::time::Instant;

use dv_torch::tch::{Device, Kind, Tensor};

use super::bucket::broadcast_buckets;
use super::checkpoint::{code_version, step_name, CheckpointState};
use super::checkpointing::{self, Resume};
use super::collective::Collective;
use super::config::{ModelConfig, RunConfig};
use super::data::build_data;
use super::gradient::{self, StepSums};
use super::lead::Lead;
use super::optim::{clip_grad_norm, Adam, FlatParams};
use super::profile::Phases;
use super::validation::validate;
use crate::data::prefetch::{Batches, Plan};
use crate::data::sampler::{splitmix64, Sampler};
use crate::models::duration::DurationModel;
use crate::models::g2p::G2p;
use crate::models::model::Model;
use crate::models::segmentation::Segmentation;
use crate::models::wavenet::Wavenet;
use crate::TrainError;

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

/// The model `[model]` names, initialised from the run's random stream.
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
    let model = crate::models::model::with_rng(splitmix64(t.seed), || build_model(cfg, device))?;
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

    // Rank 0 restores; everyone receives rank 0's state.
    let resume = match lead.as_mut() {
        Some(lead) => {
            checkpointing::restore(lead, cfg, model.as_ref(), &named, &mut adam, &mut summary.skipped_checkpoints)?
        }
        None => Resume::default(),
    };
    let Resume { step: mut start_step, mut best, mut mlflow_run_id } = resume;
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
        mlflow_run_id = lead.start_tracking(cfg, mlflow_run_id.as_deref())?;
        if start_step == 0 {
            lead.record_params(&config_toml, world, params.iter().map(|p| p.numel()).sum::<usize>())?;
        }
    }

    let sampler = Sampler { len: data.len(), batch: t.batch, seed: t.seed };
    let buckets = (t.bucket_batches > 0).then(|| crate::data::sampler::Buckets {
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
        gradient::zero_grads(flat.as_ref(), &params)?;
        let seed = splitmix64(t.seed ^ splitmix64(step ^ 0x64726f70));
        let loss_sum = model.loss_sum(&batch, true, seed)?;
        loss_sum.f_div_scalar(t.batch as f64)?.f_backward()?;
        phases.mark(1);
        let sums = StepSums {
            loss_sum: &loss_sum,
            audio_seconds: batch.audio_seconds.unwrap_or(0.0),
            // Rank 0's stop request, summed with the loss so that every rank sees it (crate::run::stop).
            stop_vote: if rank == 0 && super::stop::stop_requested() { 1.0 } else { 0.0 },
        };
        gradient::sum_grads(coll, flat.as_ref(), &params, &sums)?;
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
        let stats = gradient::summed(coll, flat.as_ref(), &sums)?;
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
            let due = checkpointing::due(cfg, done, stop);
            if due || improved {
                let state = CheckpointState {
                    step: done,
                    adam_step: adam.step,
                    best,
                    config: config_toml.clone(),
                    code_version: code_version(),
                    seed: t.seed,
                    mlflow_run_id: mlflow_run_id.clone(),
                };
                checkpointing::save(lead, cfg, &state, &named, &adam, due, improved)?;
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
        lead.finish(cfg)?;
    }
    Ok(summary)
}
