#!/usr/bin/env bash
# Featurize as a 4-task Slurm job array gives byte-identical files to one
# process, on a real single-node Slurm (infra/slurm/test/cluster.sh).
#
#   infra/slurm/test/featurize_array.sh
#
# Starts the cluster in a temporary directory, renders the embedded corpus
# (20 utterances), runs `dv featurize --shards 4` in one process and
# infra/slurm/featurize.sbatch as `sbatch --array=0-3%2`, compares every file
# the two wrote (shards, chunk indexes, bad-item tables, shard reports,
# manifest.json) with cmp, checks that the template refuses an array that does
# not start at 0, submits infra/slurm/train.sbatch on 2 pretend GPUs with a dv
# whose `train` only records its ranks and GPUs (there is no GPU to train on)
# and checks them, stops the cluster and fails if any slurm or munge
# process of it remains. Needs root and the Debian packages slurm-wlm and munge (infra/run
# test installs them); fails, never skips, without them.
#
# Reads: DV (the dv binary, default $CARGO_TARGET_DIR/debug/dv, with
# CARGO_TARGET_DIR defaulting to ~/.cache/deepvoice-rs/target); KEEP=1 keeps
# the temporary directory.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
export DV="${DV:-${CARGO_TARGET_DIR:-$HOME/.cache/deepvoice-rs/target}/debug/dv}"
[ -x "$DV" ] || { echo "featurize_array: no dv binary at $DV (build it, or set DV)" >&2; exit 1; }

work="$(mktemp -d /tmp/dv-slurm-test.XXXXXX)"
cluster="$work/cluster"
t0=$SECONDS
step() { printf 'featurize_array [%3d s]: %s\n' $((SECONDS - t0)) "$*" >&2; }

# shellcheck source=lib.sh
source "$here/lib.sh"
start_cluster

step "rendering the embedded corpus (20 utterances)"
"$DV" corpus make-default --utterances 20 --out "$work/corpus" >"$work/make-default.log" 2>&1 \
    || { cat "$work/make-default.log" >&2; exit 1; }

step "dv featurize --shards 4 in one process"
"$DV" featurize --corpus "$work/corpus" --out "$work/one" --shards 4 --jobs 2 >"$work/one.log" 2>&1 \
    || { cat "$work/one.log" >&2; exit 1; }

step "the same as a 4-task job array (sbatch --array=0-3%2 infra/slurm/featurize.sbatch)"
mkdir -p "$work/logs"
if ! (cd "$work" && sbatch --wait --quiet --array=0-3%2 --cpus-per-task=1 --time=10:00 \
    --output="$work/logs/%A_%a.out" "$root/infra/slurm/featurize.sbatch" "$work/corpus" "$work/array"); then
    tail -n 20 "$work"/logs/*.out >&2 || true
    echo "featurize_array: the array job failed" >&2
    exit 1
fi
tasks=$(find "$work/logs" -name '*.out' | wc -l)
[ "$tasks" -eq 4 ] || { echo "featurize_array: $tasks task logs, expected 4" >&2; exit 1; }

step "comparing every file"
(cd "$work/one" && find . -type f | sort) >"$work/one.files"
(cd "$work/array" && find . -type f | sort) >"$work/array.files"
if ! diff -u "$work/one.files" "$work/array.files" >&2; then
    echo "featurize_array: the two runs wrote different files" >&2
    exit 1
fi
grep -qx './manifest.json' "$work/one.files" || { echo "featurize_array: no manifest.json" >&2; exit 1; }
shards=$(grep -c '^./shards/shard-0000[0-3]-of-00004.parquet$' "$work/one.files" || true)
[ "$shards" -eq 4 ] || { echo "featurize_array: $shards feature shards, expected 4" >&2; exit 1; }
files=0
while read -r f; do
    cmp "$work/one/$f" "$work/array/$f" || { echo "featurize_array: $f differs" >&2; exit 1; }
    files=$((files + 1))
done <"$work/one.files"
step "$files files byte-identical (4 shards, their chunk indexes, bad-item tables and reports, manifest.json)"

step "an array that does not start at 0 is refused"
if (cd "$work" && sbatch --wait --quiet --array=1-2 --cpus-per-task=1 --time=10:00 \
    --output="$work/logs/bad-%A_%a.out" "$root/infra/slurm/featurize.sbatch" "$work/corpus" "$work/bad"); then
    echo "featurize_array: --array=1-2 was accepted" >&2
    exit 1
fi
grep -q 'the array must be 0-(N-1)' "$work"/logs/bad-*.out || { echo "featurize_array: no refusal message" >&2; exit 1; }
[ ! -e "$work/bad" ] || { echo "featurize_array: the refused array wrote $work/bad" >&2; exit 1; }

step "train.sbatch: 2 tasks with --gpus-per-node=2, each seeing both GPUs"
# A dv whose train records what each task was given (there is no GPU here to train on).
cat >"$work/dv-stub" <<STUB
#!/bin/bash
echo "rank=\$SLURM_PROCID world=\$SLURM_NTASKS local=\$SLURM_LOCALID gpus=\$CUDA_VISIBLE_DEVICES args=\$*" >>"$work/calls"
STUB
chmod +x "$work/dv-stub"
touch "$work/run.toml"
if ! (cd "$work" && DV="$work/dv-stub" sbatch --wait --quiet --ntasks-per-node=2 --gpus-per-node=2 \
    --cpus-per-task=1 --overcommit --time=10:00 --output="$work/logs/train-%j.out" \
    "$root/infra/slurm/train.sbatch" run.toml); then
    cat "$work"/logs/train-*.out >&2 || true
    echo "featurize_array: the train.sbatch job failed" >&2
    exit 1
fi
for r in 0 1; do
    grep -qx "rank=$r world=2 local=$r gpus=0,1 args=train --config run.toml" "$work/calls" \
        || { cat "$work/calls" "$work"/logs/train-*.out >&2; echo "featurize_array: rank $r of train missing or wrong" >&2; exit 1; }
done
step "train.sbatch: ranks 0 and 1 of 2, each seeing GPUs 0,1"

step "stopping the cluster"
trap - EXIT
"$here/cluster.sh" stop "$cluster"
rm -rf "$work"
step "passed ($version)"
