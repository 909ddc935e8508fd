//! `dv recipe run RECIPE --on slurm|kubernetes --emit DIR`: the recipe's
//! stages as cluster jobs, chained so that each starts when the one before
//! it succeeded: the jobs planned ([`super::plan`], which says what each
//! does), written as sbatch scripts ([`super::slurm`]) or Kubernetes
//! manifests ([`super::kube`]), and (Slurm without `--emit`) submitted.
//! And `dv recipe train-config`, the run config a training stage's ranks
//! train with under a scheduler.

use std::path::Path;

use anyhow::{bail, Context};

use super::config::Loaded;
use super::key::parts_of;
use super::lock::{key_of, Lock};
use super::plan::{plan, ClusterArgs, Scheduler};
use super::stage::{run_dir, Ctx, Stage};

/// `dv recipe run … --on`: plan, write, and (Slurm without --emit) submit.
pub(crate) fn run(recipe: &Path, c: &ClusterArgs) -> anyhow::Result<()> {
    let Some(on) = c.on else { bail!("--on is needed") };
    if c.gpus == 0 || c.nodes == 0 || c.array_limit == 0 || c.cpus == 0 {
        bail!("--gpus, --nodes, --array-limit and --cpus must be at least 1");
    }
    let loaded = Loaded::load(recipe)?;
    let plan = plan(recipe, &loaded, c)?;
    let (dir, submit) = match (&c.emit, on) {
        (Some(d), _) => (d.clone(), false),
        (None, Scheduler::Slurm) => (plan.out.join("slurm"), true),
        (None, Scheduler::Kubernetes) => {
            bail!("--on kubernetes writes manifests: give --emit DIR, then apply them with DIR/submit.sh")
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = std::path::absolute(&dir)?;
    let files = match on {
        Scheduler::Slurm => super::slurm::write(&plan, c, &dir)?,
        Scheduler::Kubernetes => super::kube::write(&plan, &loaded, c, &dir)?,
    };
    for f in &files {
        println!("wrote {}", dir.join(f).display());
    }
    if submit {
        println!("submitting with {}", dir.join("submit.sh").display());
        let status =
            std::process::Command::new("bash").arg(dir.join("submit.sh")).status().context("running bash submit.sh")?;
        if !status.success() {
            bail!("{}/submit.sh failed ({status})", dir.display());
        }
    } else {
        println!("submit them with {}", dir.join("submit.sh").display());
    }
    Ok(())
}

/// `dv recipe train-config RECIPE --stage NAME --out FILE`: the run config a
/// training stage trains with, as the stage itself builds it (its run
/// directory is named by its key, so the stages it reads must have run).
pub(crate) fn train_config(recipe: &Path, stage: &str, file: &Path) -> anyhow::Result<()> {
    let loaded = Loaded::load(recipe)?;
    let Ok(Stage::Train(model)) = stage.parse::<Stage>() else {
        bail!("--stage {stage:?} is not a training stage (train-segmentation, train-duration, train-wavenet)")
    };
    let out = loaded.out();
    let lock = Lock::load(&out.join("recipe.lock"))?;
    let key = key_of(&parts_of(&loaded, Stage::Train(model), &lock)?);
    let dir = run_dir(&out, model, &key);
    // As the stage reads them: the segmentation model the phones, the others the aligner's.
    let last = Stage::ALL[Stage::ALL.len() - 1];
    let ctx = Ctx { loaded: &loaded, out: out.clone(), lock: &lock, key: &key, gpus: loaded.recipe.gpus, last };
    let (cfg, _) = super::train::run_config(model, &ctx)?;
    let text = toml::to_string(&cfg).context("writing the run config as TOML")?;
    // What is written must read back as the same config.
    let back = dv_train::RunConfig::from_toml(&file.display().to_string(), &text)?;
    if toml::to_string(&back)? != text {
        bail!("the run config of {stage} does not survive a round trip through TOML");
    }
    if let Some(p) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))?;
    }
    crate::write_atomic(file, text.as_bytes())?;
    eprintln!("{stage}: run directory {}", dir.display());
    Ok(())
}
