//! The recipe's jobs as Kubernetes manifests (see [`super::plan`] for the
//! jobs), a `submit.sh` that creates them one after another and waits for
//! each to complete, a CronJob that reruns the whole recipe on a schedule,
//! and a Deployment + Service serving the voice it exports.
//!
//! Every pod mounts the PersistentVolumeClaim `--volume` (ReadWriteMany) at
//! `/dv` as `DV_HOME`, so `$DV_HOME/…` paths of the recipe land there; the
//! recipe itself is read from the training image. Credentials come from the
//! Secret `--secret` by `secretKeyRef`; no value from this process's
//! environment is written.
//!
//! Training on GPUs is a JobSet (`jobset.x-k8s.io/v1alpha2`) of one Indexed
//! Job, one pod per GPU: `RANK` is the pod's completion index, `MASTER_ADDR`
//! the first pod's name in the headless Service written beside it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::config::Loaded;
use super::plan::{sh, write_file, ClusterArgs, Plan, Work};
use super::stage::Stage;
use super::yaml::yaml;

/// Where the dv-home volume is mounted in every pod.
const DV_HOME: &str = "/dv";
/// Where the training image keeps the repository (infra/docker/train.Dockerfile).
const IMAGE_REPO: &str = "/opt/deepvoice-rs";
/// The rendezvous port of rank 0.
const PORT: u16 = 29500;
/// The AWS variables passed from the Secret, each optional.
const SECRET_KEYS: [&str; 5] =
    ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_ENDPOINT"];

/// Writes the manifests; returns their names (stages in order, then the rest).
pub(crate) fn write(plan: &Plan, loaded: &Loaded, c: &ClusterArgs, dir: &Path) -> anyhow::Result<Vec<String>> {
    let recipe = recipe_in_image(plan, c)?;
    let base = Path::new(&recipe).parent().unwrap_or(Path::new("/")).to_path_buf();
    let k = Kube { plan, c, recipe, base };
    let mut names = Vec::new();
    let mut submit = String::from("#!/bin/bash\n");
    let _ = writeln!(submit, "# Creates the jobs of recipe {} one after another, each once the one before", plan.name);
    let _ = writeln!(submit, "# completed (a failed one stops the chain). Jobs of an earlier run are deleted");
    let _ = writeln!(submit, "# first; the stages they finished are skipped by their keys in recipe.lock.");
    submit.push_str("set -euo pipefail\nhere=\"$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\"\n");
    let _ = writeln!(
        submit,
        "kubectl get pvc {} >/dev/null  # the shared DV_HOME volume (infra/k8s/dv-home-pvc.yaml)",
        sh(&c.volume)
    );
    submit.push_str(WAIT);
    for (i, job) in plan.jobs.iter().enumerate() {
        let file = format!("{:02}-{}.yaml", i + 1, job.name);
        let name = k.name(job.name);
        let (docs, kind, ok) = match &job.work {
            Work::Stages { first, last, gpu } => {
                let script = format!("exec {}", k.record(*first, *last));
                (vec![k.job(&name, job.name, &script, usize::from(*gpu), None)], "job", "Complete")
            }
            Work::Shards { shards } => {
                let script = format!(
                    "exec dv featurize --corpus {} --out {} --shard \"$JOB_COMPLETION_INDEX/{shards}\" --sample-rate {} --jobs {}",
                    sh(&k.pod_path(&plan.corpus_raw)),
                    sh(&format!("{}/features", k.pod_path(&plan.out_raw))),
                    plan.sample_rate,
                    plan.featurize_jobs.unwrap_or(c.cpus)
                );
                (vec![k.job(&name, job.name, &script, 0, Some(*shards))], "job", "Complete")
            }
            Work::Train { stage, last, ranks } => {
                (k.train(&name, job.name, *stage, *last, *ranks), "jobset", "Completed")
            }
        };
        let text = docs.iter().map(yaml).collect::<Vec<_>>().join("---\n");
        write_file(dir, &file, &format!("{}{text}", k.header(job.name)), false)?;
        let _ = writeln!(submit, "run {file} {kind} {name} {ok}");
        names.push(file);
    }
    write_file(dir, "submit.sh", &submit, true)?;
    let cron = k.cronjob(loaded)?;
    write_file(dir, "retrain-cronjob.yaml", &format!("{}{}", k.header("scheduled retraining"), yaml(&cron)), false)?;
    let serve = k.serve();
    let text = serve.iter().map(yaml).collect::<Vec<_>>().join("---\n");
    write_file(dir, "serve.yaml", &format!("{}{text}", k.header("serve the exported voice")), false)?;
    names.extend(["submit.sh".into(), "retrain-cronjob.yaml".into(), "serve.yaml".into()]);
    Ok(names)
}

/// submit.sh's helpers: wait for a condition, create a file's objects anew.
const WAIT: &str = r#"wait_for() {  # KIND NAME CONDITION: until it holds; 1 when the object failed
    local s
    while :; do
        s=" $(kubectl get "$1/$2" -o jsonpath='{.status.conditions[?(@.status=="True")].type}') "
        case "$s" in
            *" $3 "*) echo "$1/$2: $3"; return 0 ;;
            *" Failed "*) echo "$1/$2 failed: kubectl describe $1/$2" >&2; return 1 ;;
        esac
        sleep 10
    done
}
run() {  # FILE KIND NAME CONDITION
    kubectl delete --ignore-not-found --wait=true -f "$here/$1"
    kubectl create -f "$here/$1"
    wait_for "$2" "$3" "$4"
}
"#;

/// The recipe's path in the training image (`--recipe-in-image`, else its
/// path in this repository under [`IMAGE_REPO`]).
fn recipe_in_image(plan: &Plan, c: &ClusterArgs) -> anyhow::Result<String> {
    if let Some(p) = &c.recipe_in_image {
        return Ok(p.clone());
    }
    let recipe = plan.recipe.canonicalize().with_context(|| format!("reading {}", plan.recipe.display()))?;
    let root = recipe
        .ancestors()
        .find(|a| a.join("Cargo.toml").is_file() && a.join("infra/recipes").is_dir())
        .map(Path::to_path_buf);
    match root {
        Some(root) => Ok(Path::new(IMAGE_REPO).join(recipe.strip_prefix(&root)?).display().to_string()),
        None => bail!(
            "{} is not in a deepvoice-rs checkout, so its path in the training image is unknown: \
             give --recipe-in-image PATH (and put it, with the configs it names, in the image)",
            plan.recipe.display()
        ),
    }
}

struct Kube<'a> {
    plan: &'a Plan,
    c: &'a ClusterArgs,
    /// The recipe in the image, and its directory (relative paths start there).
    recipe: String,
    base: PathBuf,
}

impl Kube<'_> {
    /// An object name: `dv-<recipe>-<what>`, DNS-1123, short enough for pod host names.
    fn name(&self, what: &str) -> String {
        let raw = format!("dv-{}-{what}", self.plan.name).to_ascii_lowercase();
        let mut n: String = raw.chars().map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '-' }).collect();
        while n.contains("--") {
            n = n.replace("--", "-");
        }
        n.truncate(50);
        n.trim_end_matches('-').to_string()
    }

    fn header(&self, what: &str) -> String {
        format!(
            "# dv recipe {}: {what}. Written by\n#   dv recipe run {} --on kubernetes --emit DIR\n",
            self.plan.name,
            self.plan.recipe.display()
        )
    }

    /// A path of the recipe as a pod sees it (module docs).
    fn pod_path(&self, p: &str) -> String {
        if p.contains("://") {
            return p.to_string();
        }
        for prefix in ["$DV_HOME/", "${DV_HOME}/"] {
            if let Some(rest) = p.strip_prefix(prefix) {
                return format!("{DV_HOME}/{rest}");
            }
        }
        if Path::new(p).is_absolute() {
            p.to_string()
        } else {
            self.base.join(p).display().to_string()
        }
    }

    fn record(&self, first: Stage, last: Stage) -> String {
        format!("dv recipe run {} --stage {first} --stop-stage {last}", sh(&self.recipe))
    }

    fn labels(&self, component: &str) -> Value {
        json!({
            "app.kubernetes.io/part-of": "deepvoice-rs",
            "app.kubernetes.io/component": component,
            "deepvoice-rs/recipe": self.name("")
        })
    }

    fn env(&self, extra: &[(&str, String)]) -> Value {
        let mut env = vec![json!({ "name": "DV_HOME", "value": DV_HOME })];
        for (k, v) in extra {
            env.push(json!({ "name": k, "value": v }));
        }
        for key in SECRET_KEYS {
            env.push(json!({
                "name": key,
                "valueFrom": { "secretKeyRef": { "name": self.c.secret, "key": key, "optional": true } }
            }));
        }
        Value::Array(env)
    }

    fn volumes(&self) -> Value {
        json!([
            { "name": "dv-home", "persistentVolumeClaim": { "claimName": self.c.volume } },
            { "name": "shm", "emptyDir": { "medium": "Memory", "sizeLimit": "8Gi" } }
        ])
    }

    /// A container running `script` in bash, with `gpus` GPUs.
    fn container(&self, name: &str, script: &str, gpus: usize, env: Value) -> Value {
        let cpus = self.c.cpus.to_string();
        let mut resources = json!({ "requests": { "cpu": cpus, "memory": "16Gi" }, "limits": { "memory": "16Gi" } });
        if gpus > 0 {
            resources["limits"]["nvidia.com/gpu"] = json!(gpus);
        }
        json!({
            "name": name,
            "image": self.c.image,
            "workingDir": DV_HOME,
            "command": ["bash", "-c"],
            "args": [format!("set -euo pipefail\n{script}\n")],
            "env": env,
            "resources": resources,
            "volumeMounts": [
                { "name": "dv-home", "mountPath": DV_HOME },
                { "name": "shm", "mountPath": "/dev/shm" }
            ]
        })
    }

    /// A Job of one pod, or an Indexed Job of `indexed` pods.
    fn job(&self, name: &str, component: &str, script: &str, gpus: usize, indexed: Option<usize>) -> Value {
        let mut spec = json!({
            "backoffLimit": 2,
            "template": {
                "metadata": { "labels": self.labels(component) },
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [self.container(component, script, gpus, self.env(&[]))],
                    "volumes": self.volumes()
                }
            }
        });
        if let Some(n) = indexed {
            spec["completionMode"] = json!("Indexed");
            spec["completions"] = json!(n);
            spec["parallelism"] = json!(self.c.array_limit.min(n));
            spec["backoffLimitPerIndex"] = json!(2);
            spec.as_object_mut().map(|o| o.remove("backoffLimit"));
        }
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": { "name": name, "labels": self.labels(component) },
            "spec": spec
        })
    }

    /// A training stage on `ranks` GPUs: the headless Service and the JobSet.
    fn train(&self, name: &str, component: &str, stage: Stage, last: Stage, ranks: usize) -> Vec<Value> {
        let rjob = "rank";
        let master = format!("{name}-{rjob}-0-0.{name}");
        let script = format!(
            "export RANK=\"$JOB_COMPLETION_INDEX\"\n\
             dv recipe train-config {recipe} --stage {stage} --out /tmp/run.toml\n\
             dv train --config /tmp/run.toml\n\
             # Rank 0 records the stage (the run is at its last step, so nothing trains).\n\
             if [ \"$RANK\" = 0 ]; then\n    env -u RANK -u WORLD_SIZE -u LOCAL_RANK {record}\nfi",
            recipe = sh(&self.recipe),
            record = self.record(stage, last)
        );
        let env = self.env(&[
            ("WORLD_SIZE", ranks.to_string()),
            ("LOCAL_RANK", "0".into()),
            ("MASTER_ADDR", master),
            ("MASTER_PORT", PORT.to_string()),
        ]);
        let mut container = self.container(component, &script, 1, env);
        container["ports"] = json!([{ "name": "rendezvous", "containerPort": PORT }]);
        let service = json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": { "name": name, "labels": self.labels(component) },
            "spec": {
                "clusterIP": "None",
                "publishNotReadyAddresses": true,
                "selector": { "jobset.sigs.k8s.io/jobset-name": name },
                "ports": [{ "name": "rendezvous", "port": PORT, "targetPort": PORT }]
            }
        });
        let jobset = json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": { "name": name, "labels": self.labels(component) },
            "spec": {
                "network": { "enableDNSHostnames": true, "subdomain": name, "publishNotReadyAddresses": true },
                "failurePolicy": { "maxRestarts": 3 },
                "replicatedJobs": [{
                    "name": rjob,
                    "replicas": 1,
                    "template": { "spec": {
                        "completionMode": "Indexed",
                        "completions": ranks,
                        "parallelism": ranks,
                        "backoffLimit": 0,
                        "template": {
                            "metadata": { "labels": self.labels(component) },
                            "spec": {
                                "restartPolicy": "Never",
                                // SIGTERM: dv train checkpoints after the current step and exits 75.
                                "terminationGracePeriodSeconds": 120,
                                "containers": [container],
                                "volumes": self.volumes()
                            }
                        }
                    } }
                }]
            }
        });
        vec![service, jobset]
    }

    /// The whole recipe in one pod on a schedule (one GPU when a stage trains on one).
    fn cronjob(&self, loaded: &Loaded) -> anyhow::Result<Value> {
        let gpu = self.plan.jobs.iter().any(|j| matches!(j.work, Work::Train { .. } | Work::Stages { gpu: true, .. }));
        let script = format!("exec dv recipe run {}", sh(&self.recipe));
        let mut pod = json!({
            "restartPolicy": "Never",
            "containers": [self.container("recipe", &script, usize::from(gpu), self.env(&[]))],
            "volumes": self.volumes()
        });
        if let Some(url) = &self.c.corpus_url {
            if !url.starts_with("s3://") {
                bail!("--corpus-url {url}: the CronJob mirrors s3:// URLs (aws s3 sync); others are not written yet");
            }
            let corpus = self.pod_path(&self.plan.corpus_raw);
            if corpus.contains("://") {
                bail!(
                    "recipe {}: --corpus-url needs the recipe's corpus to be a directory to mirror into, not {corpus}",
                    loaded.file.display()
                );
            }
            let mut env =
                vec![json!({ "name": "CORPUS_URL", "value": url }), json!({ "name": "CORPUS_DIR", "value": corpus })];
            if let Value::Array(e) = self.env(&[]) {
                env.extend(e.into_iter().skip(1));
            }
            pod["initContainers"] = json!([{
                "name": "sync-corpus",
                "image": "amazon/aws-cli:2.22.0",
                "command": ["aws", "s3", "sync", "--delete", "$(CORPUS_URL)", "$(CORPUS_DIR)"],
                "env": env,
                "volumeMounts": [{ "name": "dv-home", "mountPath": DV_HOME }]
            }]);
        }
        Ok(json!({
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": { "name": self.name("retrain"), "labels": self.labels("retrain") },
            "spec": {
                "schedule": self.c.schedule,
                "timeZone": "Etc/UTC",
                "concurrencyPolicy": "Forbid",
                "successfulJobsHistoryLimit": 7,
                "failedJobsHistoryLimit": 3,
                "jobTemplate": { "spec": {
                    "backoffLimit": 2,
                    "template": { "metadata": { "labels": self.labels("retrain") }, "spec": pod }
                } }
            }
        }))
    }

    /// dv-serve with the recipe's exported voice (`out/voice`).
    fn serve(&self) -> Vec<Value> {
        let name = self.name("serve");
        let out = self.pod_path(&self.plan.out_raw);
        let select = json!({ "app.kubernetes.io/name": name });
        let mut labels = self.labels("serve");
        labels["app.kubernetes.io/name"] = json!(name);
        let deployment = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": { "name": name, "labels": labels },
            "spec": {
                "replicas": 2,
                "selector": { "matchLabels": select },
                "template": {
                    "metadata": {
                        "labels": labels,
                        "annotations": {
                            "prometheus.io/scrape": "true",
                            "prometheus.io/port": "8080",
                            "prometheus.io/path": "/metrics"
                        }
                    },
                    "spec": {
                        "terminationGracePeriodSeconds": 30,
                        "securityContext": { "runAsNonRoot": true, "runAsUser": 65532 },
                        "containers": [{
                            "name": "dv-serve",
                            "image": self.c.serve_image,
                            "args": ["--host", "0.0.0.0", "--public", "--port", "8080", "--voices", out, "--voice", "voice",
                                     "--shutdown-grace", "20"],
                            "env": [
                                { "name": "DV_HOME", "value": "/var/cache/dv" },
                                { "name": "DV_API_KEY", "valueFrom": { "secretKeyRef": { "name": "dv-serve", "key": "DV_API_KEY", "optional": true } } }
                            ],
                            "ports": [{ "name": "http", "containerPort": 8080 }],
                            "readinessProbe": { "httpGet": { "path": "/readyz", "port": "http" }, "periodSeconds": 5 },
                            "livenessProbe": { "httpGet": { "path": "/healthz", "port": "http" }, "initialDelaySeconds": 10, "periodSeconds": 10 },
                            "startupProbe": { "httpGet": { "path": "/healthz", "port": "http" }, "periodSeconds": 2, "failureThreshold": 30 },
                            "resources": { "requests": { "cpu": "2", "memory": "512Mi" }, "limits": { "memory": "1Gi" } },
                            "securityContext": { "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true },
                            "volumeMounts": [
                                { "name": "dv-home", "mountPath": DV_HOME, "readOnly": true },
                                { "name": "cache", "mountPath": "/var/cache/dv" }
                            ]
                        }],
                        "volumes": [
                            { "name": "dv-home", "persistentVolumeClaim": { "claimName": self.c.volume, "readOnly": true } },
                            { "name": "cache", "emptyDir": {} }
                        ]
                    }
                }
            }
        });
        let service = json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": { "name": name, "labels": self.labels("serve") },
            "spec": { "selector": select, "ports": [{ "name": "http", "port": 80, "targetPort": "http" }] }
        });
        vec![deployment, service]
    }
}
