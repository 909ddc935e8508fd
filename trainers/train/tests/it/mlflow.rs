//! Tracking against a real MLflow server (PyPI `mlflow`, installed by the
//! test command), started on localhost by the test and stopped after it
//! with everything it starts (uvicorn, the job runner, its huey consumers):
//! one process group, ended when the guard drops.

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dv_process_group::ProcessGroup;
use dv_train::{train_threads, RunConfig};
use serde_json::Value;

struct Server {
    /// Stops the server and its children when the test ends, however it ends.
    _group: ProcessGroup,
    url: String,
}

fn start(dir: &std::path::Path) -> Server {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let group = ProcessGroup::spawn(
        Command::new("mlflow")
            .args(["server", "--host", "127.0.0.1", "--port", &port.to_string(), "--workers", "1"])
            .arg("--backend-store-uri")
            .arg(format!("sqlite:///{}", dir.join("mlflow.db").display()))
            .arg("--artifacts-destination")
            .arg(dir.join("artifacts"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
    .expect("mlflow (pip install mlflow; the test command installs it)");
    let server = Server { _group: group, url: format!("http://127.0.0.1:{port}") };
    let http = reqwest::blocking::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !http.get(format!("{}/health", server.url)).send().is_ok_and(|r| r.status().is_success()) {
        assert!(Instant::now() < deadline, "mlflow server did not start");
        std::thread::sleep(Duration::from_millis(250));
    }
    server
}

fn get(server: &Server, endpoint: &str, query: &[(&str, &str)]) -> Value {
    let r =
        reqwest::blocking::Client::new().get(format!("{}/api/2.0/{endpoint}", server.url)).query(query).send().unwrap();
    assert!(r.status().is_success(), "{endpoint}: {}", r.status());
    r.json().unwrap()
}

#[test]
fn a_run_logs_params_metrics_and_artifacts_to_mlflow_and_resumes_the_same_run() {
    let d = tempfile::tempdir().unwrap();
    let server = start(d.path());
    let with_tracking = |steps: u64| {
        let mut cfg =
            RunConfig::from_toml("mlflow.toml", &super::run::config(d.path(), steps, 3).to_toml().unwrap()).unwrap();
        cfg.tracking.mlflow = Some(server.url.clone());
        cfg.tracking.experiment = Some("dv-test".into());
        cfg.tracking.run_name = Some("tiny-segmentation".into());
        cfg
    };
    let first = train_threads(&with_tracking(6), 1, &mut |_: &str| {}).unwrap();
    let run_id = first.mlflow_run_id.clone().expect("a run id");
    let second = train_threads(&with_tracking(9), 1, &mut |_: &str| {}).unwrap();
    assert_eq!(second.start_step, 6);
    assert_eq!(second.mlflow_run_id.as_deref(), Some(run_id.as_str()), "the resumed run continues its MLflow run");

    let run = get(&server, "mlflow/runs/get", &[("run_id", &run_id)]);
    let info = &run["run"]["info"];
    assert_eq!(info["status"], "FINISHED");
    assert_eq!(info["run_name"], "tiny-segmentation");
    let params = run["run"]["data"]["params"].as_array().unwrap();
    let param = |k: &str| params.iter().find(|p| p["key"] == k).map(|p| p["value"].as_str().unwrap().to_string());
    assert_eq!(param("train.batch").as_deref(), Some("8"), "{params:?}");
    assert_eq!(param("optimizer.beta2").as_deref(), Some("0.999"));
    assert_eq!(param("world_size").as_deref(), Some("1"));
    let history = get(&server, "mlflow/metrics/get-history", &[("run_id", &run_id), ("metric_key", "loss")]);
    let steps: Vec<u64> = history["metrics"].as_array().unwrap().iter().map(|m| m["step"].as_u64().unwrap()).collect();
    assert_eq!(steps, (1..=9).collect::<Vec<u64>>());
    let local = super::run::losses(&d.path().join("metrics.jsonl"));
    let logged: Vec<f64> =
        history["metrics"].as_array().unwrap().iter().map(|m| m["value"].as_f64().unwrap()).collect();
    for ((_, a), b) in local.iter().zip(&logged) {
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    }
    let val = get(&server, "mlflow/metrics/get-history", &[("run_id", &run_id), ("metric_key", "val_loss")]);
    assert!(!val["metrics"].as_array().unwrap().is_empty());
    let listed = |path: &str| -> Vec<String> {
        let a = get(&server, "mlflow/artifacts/list", &[("run_id", &run_id), ("path", path)]);
        a["files"]
            .as_array()
            .map(|f| f.iter().map(|x| x["path"].as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    let top = listed("");
    for want in ["config.toml", "metrics.jsonl", "checkpoint", "plots"] {
        assert!(top.iter().any(|p| p == want), "{want} missing from {top:?}");
    }
    assert_eq!(listed("checkpoint"), vec!["checkpoint/final.safetensors".to_string()]);
    assert_eq!(listed("plots"), vec!["plots/loss.png".to_string()]);
}
