//! Rank 0's part of a run: the checkpoint store, the tracker and the log.

use dv_store::Store;

use super::checkpoint::code_version;
use super::config::RunConfig;
use super::mlflow::MlflowRun;
use super::tracking::Tracker;
use crate::TrainError;

/// Progress lines go here (rank 0 only).
pub type Log<'a> = &'a mut (dyn FnMut(&str) + Send);

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

    /// Opens the JSONL file and the MLflow run (`[tracking] mlflow`, else
    /// `MLFLOW_TRACKING_URI`), continuing `resumed_run` when a checkpoint
    /// names one. Returns the MLflow run's id.
    pub(super) fn start_tracking(
        &mut self,
        cfg: &RunConfig,
        resumed_run: Option<&str>,
    ) -> Result<Option<String>, TrainError> {
        let uri = cfg.tracking.mlflow.clone().or_else(|| std::env::var("MLFLOW_TRACKING_URI").ok());
        let mlflow = match uri {
            Some(u) => {
                let exp = cfg.tracking.experiment.as_deref().unwrap_or("deepvoice");
                let name = cfg.tracking.run_name.as_deref().unwrap_or("train");
                Some(MlflowRun::start(&u, exp, name, resumed_run)?)
            }
            None => None,
        };
        self.tracker = Tracker::open(cfg.tracking.jsonl.as_deref(), mlflow)?;
        Ok(self.tracker.mlflow_run_id().map(str::to_string))
    }

    /// A new run's params (world size, code version, parameter count and the
    /// config's values) and its config file.
    pub(super) fn record_params(
        &mut self,
        config_toml: &str,
        world: usize,
        parameters: usize,
    ) -> Result<(), TrainError> {
        let mut ps = vec![
            ("world_size".to_string(), world.to_string()),
            ("code_version".to_string(), code_version()),
            ("parameters".to_string(), parameters.to_string()),
        ];
        ps.extend(flat_params(config_toml));
        self.tracker.params(&ps)?;
        self.tracker.artifact("config.toml", config_toml.as_bytes())
    }

    /// A finished run's metrics file and loss chart as artifacts; then the
    /// tracker closes.
    pub(super) fn finish(&mut self, cfg: &RunConfig) -> Result<(), TrainError> {
        if let Some(path) = &cfg.tracking.jsonl {
            if let Ok(bytes) = std::fs::read(path) {
                self.tracker.artifact("metrics.jsonl", &bytes)?;
                // A chart is a convenience: a run with no drawable loss still finishes.
                let chart = super::tracking::loss_chart(&String::from_utf8_lossy(&bytes), "training loss");
                if let Ok(png) = chart.render_png(800, 480) {
                    self.tracker.artifact("plots/loss.png", &png)?;
                }
            }
        }
        self.tracker.finish(true)
    }
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
