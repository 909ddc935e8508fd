//! Where metrics go: always a local JSONL file when configured, and an
//! MLflow tracking server when one is given (`[tracking] mlflow`, or the
//! `MLFLOW_TRACKING_URI` environment variable as MLflow's own clients read).
//!
//! JSONL: one object per line, `{"step": s, "time": unix seconds, "<metric>":
//! value, …}`; a resumed run appends, so a step recomputed after a crash
//! appears again and the later line is the one that counts. Each line is
//! written with one `write` call, so a run killed while logging leaves whole
//! lines; a file that still ends in a partial line (an older writer, a full
//! disk) is cut back to its last whole line when a run opens it.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use dv_plot::{Chart, Series};

use super::mlflow::MlflowRun;
use crate::TrainError;

fn now_s() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Cuts `path` back to its last newline when it ends in a partial line.
fn drop_partial_line(path: &str) -> std::io::Result<()> {
    let bytes = std::fs::read(path)?;
    if bytes.last().is_some_and(|&b| b != b'\n') {
        let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        std::fs::OpenOptions::new().write(true).open(path)?.set_len(keep as u64)?;
    }
    Ok(())
}

/// Metrics of rank 0, fanned out to the configured sinks.
#[derive(Default)]
pub struct Tracker {
    jsonl: Option<(String, std::fs::File)>,
    mlflow: Option<MlflowRun>,
}

impl Tracker {
    /// Opens the JSONL file (appending) and starts or continues an MLflow run.
    pub fn open(jsonl: Option<&str>, mlflow: Option<MlflowRun>) -> Result<Tracker, TrainError> {
        let jsonl = match jsonl {
            Some(path) => {
                if let Some(dir) = std::path::Path::new(path).parent() {
                    std::fs::create_dir_all(dir).map_err(|e| TrainError::Tracking(format!("{path}: {e}")))?;
                }
                let err = |e: std::io::Error| TrainError::Tracking(format!("{path}: {e}"));
                let f = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(err)?;
                drop_partial_line(path).map_err(err)?;
                Some((path.to_string(), f))
            }
            None => None,
        };
        Ok(Tracker { jsonl, mlflow })
    }

    pub fn params(&mut self, params: &[(String, String)]) -> Result<(), TrainError> {
        if let Some(m) = &mut self.mlflow {
            m.log_params(params)?;
        }
        Ok(())
    }

    pub fn metrics(&mut self, step: u64, values: &[(&str, f64)]) -> Result<(), TrainError> {
        if let Some((path, f)) = &mut self.jsonl {
            let mut obj = serde_json::Map::new();
            obj.insert("step".into(), step.into());
            obj.insert("time".into(), now_s().into());
            for (k, v) in values {
                obj.insert((*k).to_string(), serde_json::Value::from(*v));
            }
            let mut line = serde_json::Value::Object(obj).to_string();
            line.push('\n');
            f.write_all(line.as_bytes()).map_err(|e| TrainError::Tracking(format!("{path}: {e}")))?;
        }
        if let Some(m) = &mut self.mlflow {
            m.log_metrics(step, values)?;
        }
        Ok(())
    }

    pub fn artifact(&mut self, name: &str, bytes: &[u8]) -> Result<(), TrainError> {
        if let Some(m) = &mut self.mlflow {
            m.log_artifact(name, bytes)?;
        }
        Ok(())
    }

    pub fn finish(&mut self, ok: bool) -> Result<(), TrainError> {
        if let Some(m) = &mut self.mlflow {
            m.finish(ok)?;
        }
        Ok(())
    }

    /// The MLflow run id, when tracking to a server.
    pub fn mlflow_run_id(&self) -> Option<&str> {
        self.mlflow.as_ref().map(|m| m.run_id.as_str())
    }
}

/// The curves of `metrics` in a tracking JSONL text, by step; a later line
/// for a step replaces an earlier one (a step recomputed after a resume).
/// Lines that do not parse are skipped and counted in the second value.
pub fn curves(jsonl: &str, metrics: &[&str]) -> (Vec<Series>, usize) {
    let mut by_metric: Vec<std::collections::BTreeMap<u64, f64>> = vec![Default::default(); metrics.len()];
    let mut bad = 0;
    for line in jsonl.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            bad += 1;
            continue;
        };
        let Some(step) = v.get("step").and_then(|s| s.as_u64()) else {
            bad += 1;
            continue;
        };
        for (k, m) in metrics.iter().enumerate() {
            if let Some(y) = v.get(*m).and_then(|y| y.as_f64()) {
                by_metric[k].insert(step, y);
            }
        }
    }
    let series = metrics
        .iter()
        .zip(by_metric)
        .filter(|(_, pts)| !pts.is_empty())
        .map(|(m, pts)| Series { name: m.to_string(), points: pts.into_iter().map(|(s, y)| (s as f64, y)).collect() })
        .collect();
    (series, bad)
}

/// The loss chart of a run: training and validation loss against step, on
/// a log axis when the loss spans more than a decade.
pub fn loss_chart(jsonl: &str, title: &str) -> Chart {
    let (series, _) = curves(jsonl, &["loss", "val_loss"]);
    let ys = || series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).filter(|y| y.is_finite());
    let (lo, hi) = (ys().fold(f64::INFINITY, f64::min), ys().fold(f64::NEG_INFINITY, f64::max));
    Chart {
        title: title.to_string(),
        x_label: "step".into(),
        y_label: "loss".into(),
        log_y: lo > 0.0 && hi / lo > 10.0,
        series,
    }
}
