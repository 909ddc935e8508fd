//! A small client for MLflow's REST API (`/api/2.0/mlflow/...`), enough for
//! training runs: find or create the experiment, create or reopen a run,
//! log params and metrics in batches, upload artifacts through the
//! tracking server's artifact proxy (`/api/2.0/mlflow-artifacts/...`, on by
//! default since MLflow 2), and close the run. Tested against a real
//! `mlflow server` (MLflow 3).
//!
//! The `mlflow-client` crate (0.0.1) was considered: it has no artifact
//! upload, which training needs for configs, checkpoints and plots.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::TrainError;

fn millis() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// An open MLflow run.
pub struct MlflowRun {
    base: String,
    http: reqwest::blocking::Client,
    pub experiment_id: String,
    pub run_id: String,
    artifact_uri: String,
}

fn err(what: &str, e: impl std::fmt::Display) -> TrainError {
    TrainError::Tracking(format!("MLflow {what}: {e}"))
}

impl MlflowRun {
    /// Finds or creates `experiment` on the server at `uri` and starts a
    /// run named `run_name`, or reopens `resume_run_id` when given.
    pub fn start(
        uri: &str,
        experiment: &str,
        run_name: &str,
        resume_run_id: Option<&str>,
    ) -> Result<MlflowRun, TrainError> {
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| err("client", e))?;
        let base = uri.trim_end_matches('/').to_string();
        let mut run =
            MlflowRun { base, http, experiment_id: String::new(), run_id: String::new(), artifact_uri: String::new() };
        if let Some(id) = resume_run_id {
            let r = run.call("GET", "runs/get", &json!({ "run_id": id }))?;
            run.fill(&r["run"]["info"]);
            run.call("POST", "runs/update", &json!({ "run_id": id, "status": "RUNNING" }))?;
            return Ok(run);
        }
        let experiment_id = match run.call("GET", "experiments/get-by-name", &json!({ "experiment_name": experiment }))
        {
            Ok(r) => r["experiment"]["experiment_id"].as_str().unwrap_or_default().to_string(),
            Err(_) => run.call("POST", "experiments/create", &json!({ "name": experiment }))?["experiment_id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        };
        let r = run.call(
            "POST",
            "runs/create",
            &json!({ "experiment_id": experiment_id, "run_name": run_name, "start_time": millis() }),
        )?;
        run.fill(&r["run"]["info"]);
        Ok(run)
    }

    fn fill(&mut self, info: &Value) {
        self.experiment_id = info["experiment_id"].as_str().unwrap_or_default().to_string();
        self.run_id = info["run_id"].as_str().unwrap_or_default().to_string();
        self.artifact_uri = info["artifact_uri"].as_str().unwrap_or_default().to_string();
    }

    /// One REST call; GET sends the body as query parameters.
    fn call(&self, method: &str, endpoint: &str, body: &Value) -> Result<Value, TrainError> {
        let url = format!("{}/api/2.0/mlflow/{endpoint}", self.base);
        let req = if method == "GET" {
            let q: Vec<(String, String)> = body
                .as_object()
                .map(|o| {
                    o.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().map(str::to_string).unwrap_or(v.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            self.http.get(&url).query(&q)
        } else {
            self.http.post(&url).json(body)
        };
        let resp = req.send().map_err(|e| err(endpoint, e))?;
        let status = resp.status();
        let text = resp.text().map_err(|e| err(endpoint, e))?;
        if !status.is_success() {
            return Err(err(endpoint, format!("HTTP {status}: {text}")));
        }
        serde_json::from_str(&text).map_err(|e| err(endpoint, e))
    }

    pub fn log_params(&mut self, params: &[(String, String)]) -> Result<(), TrainError> {
        // log-batch takes at most 100 params per request.
        for chunk in params.chunks(100) {
            let ps: Vec<Value> = chunk.iter().map(|(k, v)| json!({ "key": k, "value": v })).collect();
            self.call("POST", "runs/log-batch", &json!({ "run_id": self.run_id, "params": ps }))?;
        }
        Ok(())
    }

    pub fn log_metrics(&mut self, step: u64, values: &[(&str, f64)]) -> Result<(), TrainError> {
        let ts = millis();
        let ms: Vec<Value> = values
            .iter()
            .filter(|(_, v)| v.is_finite())
            .map(|(k, v)| json!({ "key": k, "value": v, "timestamp": ts, "step": step }))
            .collect();
        self.call("POST", "runs/log-batch", &json!({ "run_id": self.run_id, "metrics": ms }))?;
        Ok(())
    }

    /// Uploads `bytes` as artifact `name` of the run.
    pub fn log_artifact(&mut self, name: &str, bytes: &[u8]) -> Result<(), TrainError> {
        let rel = self.artifact_uri.strip_prefix("mlflow-artifacts:/").ok_or_else(|| {
            err(
                "artifact",
                format!(
                    "run artifact URI {:?} is not served by the tracking server (start it with --serve-artifacts)",
                    self.artifact_uri
                ),
            )
        })?;
        let url = format!("{}/api/2.0/mlflow-artifacts/artifacts/{}/{name}", self.base, rel.trim_start_matches('/'));
        let resp = self.http.put(&url).body(bytes.to_vec()).send().map_err(|e| err("artifact", e))?;
        if !resp.status().is_success() {
            return Err(err("artifact", format!("HTTP {}: {}", resp.status(), resp.text().unwrap_or_default())));
        }
        Ok(())
    }

    pub fn finish(&mut self, ok: bool) -> Result<(), TrainError> {
        let status = if ok { "FINISHED" } else { "FAILED" };
        self.call("POST", "runs/update", &json!({ "run_id": self.run_id, "status": status, "end_time": millis() }))?;
        Ok(())
    }
}
