//! Checkpoints in a run: rank 0 restores the newest one that verifies (or
//! starts from `[init] from`'s weights), and saves every `[checkpoint] every`
//! steps, at the end, on a stop request and on a better validation loss,
//! keeping the last `keep_last` plus `best`.

use dv_store::Store;
use dv_torch::tch;
use dv_torch::tch::Tensor;

use super::checkpoint::{decode, encode, step_name, steps_present, CheckpointState};
use super::config::{InitConfig, RunConfig};
use super::lead::Lead;
use super::optim::Adam;
use crate::models::model::Model;
use crate::TrainError;

/// Where rank 0's restore leaves a run.
#[derive(Default)]
pub(super) struct Resume {
    /// The step reached (0 for a new run).
    pub step: u64,
    pub best: Option<f64>,
    pub mlflow_run_id: Option<String>,
}

/// Rank 0: copies the newest checkpoint that verifies into the model's
/// parameters `named` and `adam` (corrupt ones are logged and pushed to
/// `skipped`); with none, copies `[init] from`'s weights when given.
pub(super) fn restore(
    lead: &mut Lead<'_>,
    cfg: &RunConfig,
    model: &dyn Model,
    named: &[(String, Tensor)],
    adam: &mut Adam,
    skipped: &mut Vec<String>,
) -> Result<Resume, TrainError> {
    let latest = load_latest(lead, skipped)?;
    if let (None, Some(init)) = (&latest, &cfg.init) {
        init_from(lead, init, model)?;
    }
    let Some(c) = latest else { return Ok(Resume::default()) };
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
    let step = c.state.step;
    (lead.log)(&format!("resumed from {}/{} (step {step})", lead.store.url(), step_name(step)));
    Ok(Resume { step, best: c.state.best, mlflow_run_id: c.state.mlflow_run_id })
}

/// Whether step `done` writes its own checkpoint object: every `[checkpoint]
/// every` steps, the last step, and on a stop request.
pub(super) fn due(cfg: &RunConfig, done: u64, stop: bool) -> bool {
    done.is_multiple_of(cfg.checkpoint.every) || done == cfg.train.steps || stop
}

/// Rank 0 writes the checkpoint `state` of the parameters `named` and
/// `adam`: as its step's object when `due` (then drops all but the newest
/// `keep_last`), as `best.safetensors` when `improved`, and as the tracker's
/// final checkpoint at the last step.
pub(super) fn save(
    lead: &mut Lead<'_>,
    cfg: &RunConfig,
    state: &CheckpointState,
    named: &[(String, Tensor)],
    adam: &Adam,
    due: bool,
    improved: bool,
) -> Result<(), TrainError> {
    let done = state.step;
    let bytes = encode(state, &checkpoint_tensors(named, adam))?;
    if due {
        lead.rt.block_on(lead.store.put(&step_name(done), bytes.clone()))?;
        let names = lead.rt.block_on(lead.store.list(""))?;
        for old in steps_present(&names).into_iter().skip(cfg.checkpoint.keep_last) {
            lead.rt.block_on(lead.store.delete(&step_name(old)))?;
        }
    }
    if improved {
        lead.rt.block_on(lead.store.put("best.safetensors", bytes.clone()))?;
    }
    if done == cfg.train.steps {
        lead.tracker.artifact("checkpoint/final.safetensors", &bytes)?;
    }
    Ok(())
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
        std::fs::read(&name)
            .map_err(|e| TrainError::Checkpoint { name: name.clone(), reason: format!("[init] from: {e}") })?
    };
    let weights = super::checkpoint::init_weights(&name, &bytes)?;
    let values = super::checkpoint::copy_weights(&name, model, |n| weights.get(n))?;
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
