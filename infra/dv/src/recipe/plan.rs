//! The contract between `dv recipe run --on` ([`super::emit`]) and the
//! writers of its cluster jobs ([`super::slurm`], [`super::kube`]): the
//! options, the jobs in order ([`Plan`]), and the two things every writer
//! does, quoting shell words and writing files.
//!
//! Every job but the featurize shards runs `dv recipe run RECIPE --stage A
//! --stop-stage B` on the same shared `out` directory, so the stages keep
//! their keys, their skipping and their `recipe.lock` exactly as in one
//! process; the jobs only add parallelism where a stage has it:
//!
//! | job | stages | parallel work before the recorded stage |
//! | --- | --- | --- |
//! | `inspect` | inspect (and `make_default`'s corpus) | |
//! | `featurize-shards` | | an array (Slurm) or Indexed Job (Kubernetes): task i of N runs `dv featurize --shard i/N` into `out/features` |
//! | `featurize` | featurize | finds the N shards done, writes the manifest (and `features-text/`) |
//! | `train-segmentation` | train-segmentation | on GPUs: one `dv train` rank per GPU (srun, or a JobSet) on the stage's run config (`dv recipe train-config`) |
//! | `align` | align | |
//! | `train-duration` | train-duration, g2p | as train-segmentation |
//! | `train-wavenet` | train-wavenet | as train-segmentation |
//! | `export` | export, evaluate, report | |
//!
//! The recorded stage then finds the run's last checkpoint at its final
//! step and trains nothing. A training stage on the CPU trains in the
//! recording job itself (its `ranks` as processes on that job's node). The jobs run one
//! after another, never two at once: each rewrites `recipe.lock` whole.
//!
//! The featurize array's shard count is the recipe's `[featurize] shards`,
//! else what `dv featurize` would choose (one per 256 utterances) for the
//! corpus as it is now; a corpus that does not exist yet needs `shards`.
//!
//! Nothing from the environment is written into a script or manifest:
//! Slurm jobs get credentials from the environment sbatch exports, and
//! Kubernetes pods from a Secret by `secretKeyRef`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};

use super::config::Loaded;
use super::stage::{Model, Stage};

/// The options of `dv recipe run` for cluster jobs.
#[derive(Args, Clone, Debug, Default)]
pub(crate) struct ClusterArgs {
    /// Run the stages as cluster jobs instead of in this process: `slurm` (sbatch scripts chained
    /// with afterok; submitted at once unless --emit) or `kubernetes` (manifests; needs --emit).
    /// Every job runs all its stages; --stage, --dry-run and the --force options do not apply.
    #[arg(long, value_enum, conflicts_with_all = ["stage", "stop_stage", "dry_run", "force", "force_downstream"])]
    pub on: Option<Scheduler>,
    /// Write the job scripts or manifests, and a submit.sh that submits them in order, to this
    /// directory; submit nothing.
    #[arg(long, requires = "on")]
    pub emit: Option<PathBuf>,
    /// GPUs per node for the training stages whose run config trains on `cuda` (one rank each).
    #[arg(long, default_value_t = 1, requires = "on")]
    pub gpus: usize,
    /// Nodes for those training stages.
    #[arg(long, default_value_t = 1, requires = "on")]
    pub nodes: usize,
    /// Featurize shards that run at once (Slurm's %N, an Indexed Job's parallelism).
    #[arg(long, default_value_t = 4, requires = "on")]
    pub array_limit: usize,
    /// CPUs per featurize task and per CPU stage.
    #[arg(long, default_value_t = 4, requires = "on")]
    pub cpus: usize,
    /// (slurm) The partition to submit to.
    #[arg(long, requires = "on")]
    pub partition: Option<String>,
    /// (kubernetes) The training image (infra/docker/train.Dockerfile).
    #[arg(long, default_value = "deepvoice-rs/train:latest", requires = "on")]
    pub image: String,
    /// (kubernetes) The serving image (infra/docker/serve.Dockerfile).
    #[arg(long, default_value = "deepvoice-rs/serve:latest", requires = "on")]
    pub serve_image: String,
    /// (kubernetes) The recipe's path inside the training image (default: its path in this
    /// repository under /opt/deepvoice-rs).
    #[arg(long, requires = "on")]
    pub recipe_in_image: Option<String>,
    /// (kubernetes) The PersistentVolumeClaim mounted as DV_HOME (/dv) in every pod.
    #[arg(long, default_value = "dv-home", requires = "on")]
    pub volume: String,
    /// (kubernetes) The Secret the AWS_* credentials come from (each key optional).
    #[arg(long, default_value = "dv-object-store", requires = "on")]
    pub secret: String,
    /// (kubernetes) The retraining CronJob's schedule.
    #[arg(long, default_value = "0 2 * * *", requires = "on")]
    pub schedule: String,
    /// (kubernetes) An s3:// URL the retraining CronJob mirrors into the recipe's corpus
    /// directory before each run.
    #[arg(long, requires = "on")]
    pub corpus_url: Option<String>,
}

/// The schedulers `--on` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Scheduler {
    Slurm,
    Kubernetes,
}

/// What one job does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    /// `dv recipe run --stage first --stop-stage last`, on one GPU when `gpu`.
    Stages { first: Stage, last: Stage, gpu: bool },
    /// `dv featurize --shard i/shards` for every i, at most `limit` at once.
    Shards { shards: usize },
    /// A training stage on `ranks` GPU ranks, then its stages (to `last`) recorded.
    Train { stage: Stage, last: Stage, ranks: usize },
}

/// One job of the chain.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    pub name: &'static str,
    pub work: Work,
}

/// The facts the emitters need, taken from the recipe.
pub(crate) struct Plan {
    pub recipe: PathBuf,
    /// The recipe's name (its file stem), for job names.
    pub name: String,
    pub jobs: Vec<Job>,
    /// The corpus resolved here (an absolute path or a URL), and as the recipe writes it.
    pub corpus: String,
    pub corpus_raw: String,
    /// The output directory resolved here, and as the recipe writes it.
    pub out: PathBuf,
    pub out_raw: String,
    pub sample_rate: u32,
    pub featurize_jobs: Option<usize>,
}

fn cuda(device: &str) -> bool {
    device.starts_with("cuda")
}

/// Whether a training stage's run config trains on a GPU.
fn trains_on_gpu(loaded: &Loaded, model: Model) -> anyhow::Result<bool> {
    let table = model.table(loaded)?;
    let device = table.get("train").and_then(|t| t.get("device")).and_then(|d| d.as_str()).unwrap_or("cpu");
    Ok(cuda(device))
}

/// The shard count the featurize array uses (module docs).
fn shard_count(loaded: &Loaded) -> anyhow::Result<usize> {
    if let Some(n) = loaded.recipe.featurize.shards {
        return Ok(n.max(1));
    }
    let corpus = loaded.resolve(&loaded.recipe.corpus);
    let local = corpus.strip_prefix("file://").unwrap_or(&corpus);
    if corpus.contains("://") && !corpus.starts_with("file://") || !Path::new(local).exists() {
        bail!(
            "recipe {}: the corpus {corpus} is not a local directory that exists now, so the featurize \
             array's size is unknown: set [featurize] shards",
            loaded.file.display()
        );
    }
    let format = loaded
        .recipe
        .format
        .as_deref()
        .map(str::parse::<dv_corpus::CorpusKind>)
        .transpose()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let n = dv_corpus::read(local, format)?.utterances.len();
    Ok(n.div_ceil(256).max(1))
}

/// The recipe's jobs in order (module docs).
pub(crate) fn plan(recipe: &Path, loaded: &Loaded, c: &ClusterArgs) -> anyhow::Result<Plan> {
    let r = &loaded.recipe;
    let ranks = c.gpus.max(1) * c.nodes.max(1);
    let train = |model: Model, last: Stage| -> anyhow::Result<Work> {
        let stage = Stage::Train(model);
        Ok(if trains_on_gpu(loaded, model)? {
            Work::Train { stage, last, ranks }
        } else {
            Work::Stages { first: stage, last, gpu: false }
        })
    };
    let one = |stage: Stage, gpu: bool| Work::Stages { first: stage, last: stage, gpu };
    let jobs = vec![
        Job { name: "inspect", work: one(Stage::Inspect, false) },
        Job { name: "featurize-shards", work: Work::Shards { shards: shard_count(loaded)? } },
        Job { name: "featurize", work: one(Stage::Featurize, false) },
        Job { name: "train-segmentation", work: train(Model::Segmentation, Stage::Train(Model::Segmentation))? },
        Job { name: "align", work: one(Stage::Align, cuda(&r.align.device)) },
        Job { name: "train-duration", work: train(Model::Duration, Stage::G2p)? },
        Job { name: "train-wavenet", work: train(Model::Wavenet, Stage::Train(Model::Wavenet))? },
        Job { name: "export", work: Work::Stages { first: Stage::Export, last: Stage::Report, gpu: false } },
    ];
    let recipe = std::path::absolute(recipe).with_context(|| format!("resolving {}", recipe.display()))?;
    let name = recipe.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "recipe".into());
    Ok(Plan {
        recipe,
        name,
        jobs,
        corpus: absolute(&loaded.resolve(&r.corpus))?,
        corpus_raw: r.corpus.clone(),
        out: PathBuf::from(absolute(&loaded.out().display().to_string())?),
        out_raw: r.out.clone(),
        sample_rate: r.featurize.sample_rate,
        featurize_jobs: r.featurize.jobs,
    })
}

/// A resolved path made absolute; URLs are kept.
fn absolute(p: &str) -> anyhow::Result<String> {
    if p.contains("://") {
        return Ok(p.to_string());
    }
    Ok(std::path::absolute(p).with_context(|| format!("resolving {p}"))?.display().to_string())
}

/// Writes `text` to `dir/name` (executable when `exec`).
pub(crate) fn write_file(dir: &Path, name: &str, text: &str, exec: bool) -> anyhow::Result<()> {
    let path = dir.join(name);
    crate::write_atomic(&path, text.as_bytes())?;
    if exec {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("chmod {}", path.display()))?;
    }
    Ok(())
}

/// A word for a POSIX shell, single-quoted when it needs to be.
pub(crate) fn sh(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+%@".contains(c)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
