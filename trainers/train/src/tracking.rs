//! Where metrics go: always a local JSONL file when configured, and an
//! MLflow tracking server when one is given (`[tracking] mlflow`, or the
//! `MLFLOW_TRACKING_URI` environment variable as MLflow's own clients read).
//!
//! JSONL: one object per line, `{"step": s, "time": unix seconds, "<metric>":
//! value, …}`; a resumed run appends, so a step recomputed after a crash
//! appears again and the later line is the one that counts.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::mlflow::MlflowRun;
use crate::TrainError;

fn now_s() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
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
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| TrainError::Tracking(format!("{path}: {e}")))?;
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
            writeln!(f, "{}", serde_json::Value::Object(obj))
                .and_then(|_| f.flush())
                .map_err(|e| TrainError::Tracking(format!("{path}: {e}")))?;
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
