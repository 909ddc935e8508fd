//! The recipe's jobs as sbatch scripts and a `submit.sh` that chains them
//! with `--dependency=afterok` (see [`super::plan`] for the jobs).
//!
//! Paths are resolved when the scripts are written, with this process's
//! `DV_HOME`, which `submit.sh` exports again so every job sees the same.
//! Job logs go to `DIR/logs/`. `dv` is `$DV` when set, else `dv` on `PATH`.

use std::fmt::Write as _;
use std::path::Path;

use super::plan::{sh, write_file, ClusterArgs, Plan, Work};
use super::stage::Stage;

/// Writes the scripts; returns their names in submission order, then `submit.sh`.
pub(crate) fn write(plan: &Plan, c: &ClusterArgs, dir: &Path) -> anyhow::Result<Vec<String>> {
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs)?;
    let recipe = sh(&plan.recipe.display().to_string());
    let mut names = Vec::new();
    for (i, job) in plan.jobs.iter().enumerate() {
        let file = format!("{:02}-{}.sbatch", i + 1, job.name);
        let mut s = String::from("#!/bin/bash\n");
        let _ =
            writeln!(s, "# dv recipe {}: job {} of {} ({}), written by", plan.name, i + 1, plan.jobs.len(), job.name);
        let _ = writeln!(s, "#   dv recipe run {} --on slurm --emit {}", plan.recipe.display(), dir.display());
        let _ = writeln!(s, "# Submit the chain with submit.sh, which orders the jobs with afterok.");
        let _ = writeln!(s, "#SBATCH --job-name=dv-{}-{}", plan.name, job.name);
        if let Some(p) = &c.partition {
            let _ = writeln!(s, "#SBATCH --partition={p}");
        }
        let array = matches!(job.work, Work::Shards { .. });
        let pattern = if array { "%x-%A_%a.out" } else { "%x-%j.out" };
        let _ = writeln!(s, "#SBATCH --output={}", logs.join(pattern).display());
        match &job.work {
            Work::Shards { shards } => {
                let _ = writeln!(s, "#SBATCH --array=0-{}%{}", shards - 1, c.array_limit);
                let _ = writeln!(s, "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task={}", c.cpus);
            }
            Work::Stages { gpu, .. } => {
                let _ = writeln!(s, "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task={}", c.cpus);
                if *gpu {
                    let _ = writeln!(s, "#SBATCH --gpus-per-node=1");
                }
            }
            Work::Train { .. } => {
                // One task per GPU; every task sees all the node's GPUs and
                // takes cuda:SLURM_LOCALID (docs/cluster.md).
                let _ = writeln!(s, "#SBATCH --nodes={}", c.nodes);
                let _ = writeln!(s, "#SBATCH --ntasks-per-node={}", c.gpus);
                let _ = writeln!(s, "#SBATCH --gpus-per-node={}", c.gpus);
                let _ = writeln!(s, "#SBATCH --cpus-per-task={}", c.cpus);
                // SIGTERM 120 s before the limit or at preemption: dv train checkpoints and
                // exits 75, and the job requeues itself to resume there.
                let _ = writeln!(s, "#SBATCH --signal=TERM@120\n#SBATCH --requeue\n#SBATCH --open-mode=append");
            }
        }
        s.push_str("set -euo pipefail\nDV=\"${DV:-dv}\"\n");
        let _ = writeln!(s, "RECIPE={recipe}");
        // A CPU stage trains in this process: not a rank of a Slurm step.
        let record = |s: &mut String, first: Stage, last: Stage| {
            let _ = writeln!(
                s,
                "env -u SLURM_PROCID -u SLURM_NTASKS -u SLURM_LOCALID \"$DV\" recipe run \"$RECIPE\" --stage {first} --stop-stage {last}"
            );
        };
        match &job.work {
            Work::Stages { first, last, .. } => record(&mut s, *first, *last),
            Work::Shards { shards } => {
                let _ = writeln!(
                    s,
                    "if [ \"${{SLURM_ARRAY_TASK_COUNT:-}}\" != {shards} ] || [ \"${{SLURM_ARRAY_TASK_MIN:-}}\" != 0 ]; then\n    \
                     echo \"this array must run tasks 0-{} (got ${{SLURM_ARRAY_TASK_MIN:-?}}-${{SLURM_ARRAY_TASK_MAX:-?}})\" >&2; exit 2\nfi",
                    shards - 1
                );
                let corpus = sh(&plan.corpus);
                let out = sh(&plan.out.join("features").display().to_string());
                let _ = writeln!(
                    s,
                    "exec \"$DV\" featurize --corpus {corpus} --out {out} --shard \"$SLURM_ARRAY_TASK_ID/{shards}\" --sample-rate {} --jobs \"${{SLURM_CPUS_PER_TASK:-{}}}\"",
                    plan.sample_rate,
                    plan.featurize_jobs.unwrap_or(c.cpus)
                );
            }
            Work::Train { stage, last, .. } => {
                let cfg = sh(&dir.join("run-configs").join(format!("{stage}.toml")).display().to_string());
                let _ = writeln!(s, "\"$DV\" recipe train-config \"$RECIPE\" --stage {stage} --out {cfg}");
                let _ = writeln!(
                    s,
                    "rc=0\nsrun --kill-on-bad-exit=1 \"$DV\" train --config {cfg} || rc=$?\n\
                     if [ \"$rc\" -eq 75 ]; then scontrol requeue \"$SLURM_JOB_ID\" || true; fi\n\
                     if [ \"$rc\" -ne 0 ]; then exit \"$rc\"; fi"
                );
                record(&mut s, *stage, *last);
            }
        }
        write_file(dir, &file, &s, true)?;
        names.push(file);
    }
    let mut s = String::from("#!/bin/bash\n");
    let _ = writeln!(s, "# Submits the jobs of recipe {}, each after the one before succeeded", plan.name);
    let _ = writeln!(s, "# (afterok; a failed job cancels the rest). Prints each job's id.");
    s.push_str("set -euo pipefail\nhere=\"$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\"\n");
    let _ = writeln!(s, "export DV_HOME={}", sh(&crate::dv_home().display().to_string()));
    s.push_str(
        "prev=\"\"\nsubmit() {\n    local dep=()\n    if [ -n \"$prev\" ]; then dep=(--dependency=afterok:\"$prev\" --kill-on-invalid-dep=yes); fi\n    \
         prev=$(sbatch --parsable \"${dep[@]}\" \"$here/$1\")\n    prev=\"${prev%%;*}\"\n    echo \"$1 $prev\"\n}\n",
    );
    for n in &names {
        let _ = writeln!(s, "submit {n}");
    }
    write_file(dir, "submit.sh", &s, true)?;
    names.push("submit.sh".into());
    Ok(names)
}
