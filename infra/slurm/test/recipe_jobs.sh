#!/usr/bin/env bash
# The tiny recipe as dependent Slurm jobs, on a real single-node Slurm
# (infra/slurm/test/cluster.sh): `dv recipe run --on slurm --emit` writes the
# jobs, their submit.sh submits them chained by afterok, and every job must
# complete with all 10 stages in recipe.lock, the featurize shards written
# by the array tasks (the featurize stage finds them complete), and no
# credential from the environment in any job script, log or output. Then
# the chain is submitted again on the unchanged corpus: every stage is
# recorded as skipped and recipe.lock is unchanged (the scheduled rerun's
# no-op). Last, a CPU dv train job sent SIGTERM mid-run checkpoints and
# exits 75, train.sbatch requeues it, and it resumes and ends with the
# losses of an uninterrupted run.
#
#   infra/slurm/test/recipe_jobs.sh
#
# Needs root, slurm-wlm, munge and festival (infra/run test installs them);
# fails, never skips, without them. Reads DV (the dv binary, default
# $CARGO_TARGET_DIR/debug/dv) and KEEP=1 (keep the temporary directory).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
export DV="${DV:-${CARGO_TARGET_DIR:-$HOME/.cache/deepvoice-rs/target}/debug/dv}"
[ -x "$DV" ] || { echo "recipe_jobs: no dv binary at $DV (build it, or set DV)" >&2; exit 1; }

work="$(mktemp -d /tmp/dv-slurm-recipe.XXXXXX)"
cluster="$work/cluster"
t0=$SECONDS
step() { printf 'recipe_jobs [%3d s]: %s\n' $((SECONDS - t0)) "$*" >&2; }
fail() { echo "recipe_jobs: $*" >&2; exit 1; }

# shellcheck source=lib.sh
source "$here/lib.sh"
start_cluster

step "rendering the embedded corpus (10 utterances)"
"$DV" corpus make-default --utterances 10 --out "$work/corpus" >"$work/make-default.log" 2>&1 \
    || { cat "$work/make-default.log" >&2; exit 1; }

configs="$root/trainers/train/configs"
cat >"$work/tiny.toml" <<TOML
corpus = "$work/corpus"
out = "$work/out"

[featurize]
shards = 2
jobs = 1

[train_segmentation]
config = "$configs/segmentation-embedded.toml"
set.model.sizes = { conv_channels = 2, gru = 16, gru_layers = 1 }
set.train = { steps = 4, batch = 4, log_every = 2, validate_every = 0, threads_per_rank = 1 }
set.checkpoint = { every = 4, keep_last = 1 }

[train_duration]
config = "$configs/duration-embedded-aligned.toml"
set.model.preset = "tiny"
set.data.validation_fraction = 0.3
set.train = { steps = 4, batch = 2, log_every = 2, validate_every = 0, threads_per_rank = 1 }
set.checkpoint = { every = 4, keep_last = 1 }

[g2p]
model = "$root/trainers/train/models/g2p-compact.safetensors"

[train_wavenet]
config = "$configs/wavenet-embedded-cpu.toml"
set.data.validation_fraction = 0.3
set.train = { steps = 4, batch = 1, log_every = 2, validate_every = 0, threads_per_rank = 1 }
set.checkpoint = { every = 2, keep_last = 2 }

[evaluate]
sentences = ["Hello there."]
max_seconds = 1.0
wer_utterances = 0
TOML

# Credentials in the environment: sbatch exports them to the jobs; nothing may write them.
export AWS_ACCESS_KEY_ID=AKIASENTINEL0000SLURM AWS_SECRET_ACCESS_KEY=sentinel-slurm-secret-3c1e

step "dv recipe run --on slurm --emit"
"$DV" recipe run "$work/tiny.toml" --on slurm --emit "$work/jobs" --array-limit 2 --cpus 1 >"$work/emit.log" 2>&1 \
    || { cat "$work/emit.log" >&2; exit 1; }

# Submits the chain, waits until the queue is empty, and checks that every job completed.
run_chain() {
    local ids id state
    bash "$work/jobs/submit.sh" >"$work/submit-$1.out"
    ids=$(awk '{print $2}' "$work/submit-$1.out")
    [ "$(echo "$ids" | wc -w)" -eq 8 ] || { cat "$work/submit-$1.out" >&2; fail "submit.sh did not submit 8 jobs"; }
    for _ in $(seq 1800); do
        [ -z "$(squeue -h -o %i)" ] && break
        sleep 0.5
    done
    [ -z "$(squeue -h -o %i)" ] || { squeue >&2; fail "the jobs did not finish in 15 min"; }
    for id in $ids; do
        # Completed jobs stay known to slurmctld for MinJobAge (300 s).
        state=$(scontrol show job "$id" | tr ' ' '\n' | sed -n 's/^JobState=//p' | sort -u | tr '\n' ' ')
        [ "$state" = "COMPLETED " ] || { tail -n 30 "$work"/jobs/logs/*.out >&2; fail "job $id: $state"; }
    done
}

step "submitting the chain (8 jobs, the featurize array of 2 tasks)"
run_chain 1
python3 - "$work/out/recipe.lock" <<'PY' || fail "recipe.lock does not hold the 10 stages"
import json, sys
stages = json.load(open(sys.argv[1]))["stages"]
assert len(stages) == 10, sorted(stages)
PY
grep -q 'shards 0 of 2 written, 2 already complete' "$work/out/logs/featurize.log" \
    || { cat "$work/out/logs/featurize.log" >&2; fail "the featurize stage did not find the array's shards"; }
[ -f "$work/out/voice/config.json" ] || fail "no voice exported"
[ "$(find "$work/jobs/logs" -name 'dv-tiny-featurize-shards-*_*.out' | wc -l)" -eq 2 ] || fail "not 2 array task logs"
cp "$work/out/recipe.lock" "$work/lock-1"
step "all 8 jobs completed; 10 stages in recipe.lock"

step "submitting it again on the unchanged corpus"
rm -f "$work"/jobs/logs/*.out
run_chain 2
skipped=$(cat "$work"/jobs/logs/*.out | grep -c 'skipped (key unchanged, outputs present)' || true)
[ "$skipped" -eq 10 ] || { cat "$work"/jobs/logs/*.out >&2; fail "$skipped stages skipped on the rerun, expected 10"; }
if cat "$work"/jobs/logs/*.out | grep -q ': running ('; then fail "a stage ran again"; fi
cmp "$work/lock-1" "$work/out/recipe.lock" || fail "recipe.lock changed on the no-op rerun"

if grep -rlF -e "$AWS_SECRET_ACCESS_KEY" -e "$AWS_ACCESS_KEY_ID" "$work/jobs" "$work/out" "$work/emit.log" "$work"/submit-*.out; then
    fail "a credential was written (files above)"
fi
step "rerun: all 10 stages skipped, recipe.lock unchanged; no credential in any job script, log or output"

step "train.sbatch: dv train stopped by SIGTERM checkpoints, exits 75, is requeued and ends with the losses of an uninterrupted run"
# A small CPU run (one task: dv train trains on this process's threads),
# first uninterrupted outside Slurm, then as a job sent SIGTERM mid-run.
mkdir -p "$work/whole" "$work/job"
cat >"$work/run.toml" <<'RUN'
[model]
kind = "segmentation"
preset = "tiny"

[data]
kind = "synthetic"
examples = 64
features = 20
classes = 16
seed = 3

[optimizer]
lr = 3e-3

[schedule]
rate = 0.5
every = 200

[train]
steps = 600
batch = 8
seed = 11
log_every = 1
threads_per_rank = 1

[checkpoint]
url = "ck"
every = 100000
keep_last = 2

[tracking]
jsonl = "metrics.jsonl"
RUN
(cd "$work/whole" && "$DV" train --config ../run.toml >/dev/null 2>&1) || fail "the uninterrupted run failed"
id=$(cd "$work/job" && sbatch --parsable --ntasks-per-node=1 --gpus-per-node=1 --cpus-per-task=1 \
    --time=10:00 --output="$work/requeue-%j.out" "$root/infra/slurm/train.sbatch" ../run.toml)
logged() { if [ -f "$work/job/metrics.jsonl" ]; then wc -l <"$work/job/metrics.jsonl"; else echo 0; fi; }
for _ in $(seq 600); do
    [ "$(logged)" -ge 50 ] && break
    sleep 0.1
done
[ "$(logged)" -ge 50 ] || { cat "$work/requeue-$id.out" >&2; fail "the training job did not start"; }
scancel --signal=TERM "$id"   # what --signal=TERM@120 sends the step before the time limit
for _ in $(seq 300); do
    job=$(scontrol show job "$id" | tr ' ' '\n')
    if echo "$job" | grep -qx 'Restarts=1' && echo "$job" | grep -qx 'JobState=PENDING'; then break; fi
    sleep 0.1
done
# Slurm holds a requeued job back for a while (its BeginTime); start it
# sooner, but not within the second of the requeue: slurmd refuses a
# credential made in the same second as the revoked one ("Job credential
# revoked").
sleep 2
scontrol update JobId="$id" StartTime=now
for _ in $(seq 1200); do [ -z "$(squeue -h -o %i)" ] && break; sleep 0.1; done
[ -z "$(squeue -h -o %i)" ] || { squeue >&2; fail "the requeued job did not finish"; }
state=$(scontrol show job "$id" | tr ' ' '\n' | grep -E '^(JobState|Restarts)=' | tr '\n' ' ')
[ "$state" = "JobState=COMPLETED Restarts=1 " ] || { cat "$work/requeue-$id.out" >&2; fail "job $id: $state"; }
grep -q 'requeueing job' "$work/requeue-$id.out" || { cat "$work/requeue-$id.out" >&2; fail "train.sbatch did not requeue"; }
grep -q 'resumed from' "$work/requeue-$id.out" || { cat "$work/requeue-$id.out" >&2; fail "the requeued run did not resume"; }
# The last logged loss of every step (a resumed run may log a step again), as in dv-train's tests.
losses() { python3 -c 'import json,sys; d={}
for l in open(sys.argv[1]):
    v=json.loads(l)
    if "loss" in v: d[v["step"]]=v["loss"]
print("\n".join(f"{k} {d[k]!r}" for k in sorted(d)))' "$1"; }
[ "$(losses "$work/whole/metrics.jsonl")" = "$(losses "$work/job/metrics.jsonl")" ] \
    || { diff <(losses "$work/whole/metrics.jsonl") <(losses "$work/job/metrics.jsonl") | head >&2; fail "the requeued run's losses differ"; }
stopped=$(grep -o 'stopped on SIGTERM after step [0-9]*' "$work/requeue-$id.out" | head -1 || true)
step "job $id: SIGTERM, exit 75, requeued (Restarts=1), resumed; 600 losses equal to the uninterrupted run's (${stopped:-stop line not found})"

step "stopping the cluster"
trap - EXIT
"$here/cluster.sh" stop "$cluster"
rm -rf "$work"
step "passed ($version)"
