#!/usr/bin/env bash
# Featurize then train, as two Slurm jobs: infra/slurm/featurize.sbatch as an
# array of SHARDS tasks (at most LIMIT at once), then infra/slurm/train.sbatch
# on GPUS GPUs of one node, held until every featurize task has succeeded
# (--dependency=afterok) and cancelled if one fails (--kill-on-invalid-dep).
#
#   infra/slurm/pipeline.sh CORPUS FEATURES RUN.toml [SHARDS [LIMIT [GPUS]]]
#
#   CORPUS    a corpus directory, table or URL (see featurize.sbatch)
#   FEATURES  where featurize writes; RUN.toml's `[data] url` must name the
#             same place (relative paths: from the directory you submit in)
#   RUN.toml  the dv train config
#   SHARDS    featurize tasks (default 8), LIMIT running at once (default 4),
#   GPUS      training tasks, one per GPU (default 8)
#
# Prints the two job ids. Reads: DV (the dv binary, passed to the jobs),
# FEATURIZE_SBATCH and TRAIN_SBATCH (more sbatch options for each job, split
# on spaces, e.g. TRAIN_SBATCH="--cpus-per-task=16 --time=48:00:00"; they
# override the templates' #SBATCH lines), SBATCH_* (sbatch's own defaults:
# SBATCH_PARTITION, SBATCH_ACCOUNT, ...);
# the jobs read what the templates read. dv featurize skips finished shards and
# dv train resumes from its checkpoints, so rerunning the pipeline (by hand or
# from scrontab.example) redoes only what is missing.
set -euo pipefail

if [ $# -lt 3 ] || [ $# -gt 6 ]; then
    echo "usage: $0 CORPUS FEATURES RUN.toml [SHARDS [LIMIT [GPUS]]]" >&2
    exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
corpus="$1" features="$2" config="$3"
shards="${4:-8}" limit="${5:-4}" gpus="${6:-8}"
[ -f "$config" ] || { echo "$0: no run config $config" >&2; exit 2; }

# --parsable prints "jobid" or "jobid;cluster".
# shellcheck disable=SC2086
featurize=$(sbatch --parsable --array="0-$((shards - 1))%$limit" ${FEATURIZE_SBATCH:-} \
    "$here/featurize.sbatch" "$corpus" "$features")
featurize="${featurize%%;*}"
# shellcheck disable=SC2086
train=$(sbatch --parsable --dependency="afterok:$featurize" --kill-on-invalid-dep=yes ${TRAIN_SBATCH:-} \
    --ntasks-per-node="$gpus" --gpus-per-node="$gpus" \
    "$here/train.sbatch" "$config")
train="${train%%;*}"
echo "featurize $featurize"
echo "train $train"
