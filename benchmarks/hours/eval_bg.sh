#!/usr/bin/env bash
# After `seeds.sh` (issue 5), on the same warm machine: waits until the seeds' runs have ended (at
# most WAIT_S seconds; a run still going then is stopped and its newest checkpoint used), then
# decodes the 5,843 test words with all of them as an ensemble (beam 5), in the foreground, into
# $OUT/ensemble.txt; MEMBERS=1 also scores each run alone afterwards (in the background, so that
# they outlive the call: /root/dvwork/eval-<run>.txt). Right-to-left runs ([data] reverse) are
# left out of the ensemble; with any, the ensemble is decoded again with them rescoring each
# word's 5-best list (`--rescore-with`, weight RESCORE_WEIGHT, default 1), into the same file.
# Run from the repo root on the device:
#   WAIT_S=200 bash benchmarks/hours/eval_bg.sh $OUT
set -uo pipefail
out=$1 work=/root/dvwork
mkdir -p "$out"
source benchmarks/device_env.sh
device_env .carry/dv.xz "$work"
export DV_HOME=$work DV_CMUDICT=$PWD/.carry/cmudict.dict
runs=($(cat $work/ensemble-runs.txt))
going() { for r in "${runs[@]}"; do pgrep -f "config [${r:0:1}]${r:1}.toml" > /dev/null && return 0; done; return 1; }
deadline=$(( $(date +%s) + ${WAIT_S:-200} ))
while going && [ "$(date +%s)" -lt $deadline ]; do sleep 2; done
lasts=()
for r in "${runs[@]}"; do
    if pgrep -f "config [${r:0:1}]${r:1}.toml" > /dev/null; then
        pkill -f "config [${r:0:1}]${r:1}.toml"; sleep 3; echo "$r stopped before its last step" | tee -a "$out/ensemble.txt"
    fi
    lasts+=("$(ls $work/$r/checkpoints/step-*.safetensors | tail -1)")
    cp "$work/$r/metrics.jsonl" "$out/$r-metrics.jsonl"; cp "$work/$r.toml" "$out/"
done
printf '%s\n' "${lasts[@]}" | tee "$out/lasts.txt"
l2r=(); r2l=()
for i in "${!runs[@]}"; do
    if grep -q "^reverse = true" "$work/${runs[$i]}.toml"; then r2l+=("${lasts[$i]}"); else l2r+=("${lasts[$i]}"); fi
done
withs=(); for ck in "${l2r[@]:1}"; do withs+=(--with "$ck"); done
date +%T
OMP_NUM_THREADS=12 timeout "${EVAL_S:-300}" "$dv" evaluate --checkpoint "${l2r[0]}" "${withs[@]}" --device cuda 2>&1 \
    | tail -2 | tee -a "$out/ensemble.txt"
date +%T
if [ ${#r2l[@]} -gt 0 ]; then
    rescore=(); for ck in "${r2l[@]}"; do rescore+=(--rescore-with "$ck"); done
    OMP_NUM_THREADS=12 timeout "${EVAL_S:-300}" "$dv" evaluate --checkpoint "${l2r[0]}" "${withs[@]}" "${rescore[@]}" \
        --rescore-weight "${RESCORE_WEIGHT:-1}" --device cuda 2>&1 | tail -2 | tee -a "$out/ensemble.txt"
    date +%T
fi
if [ -n "${MEMBERS:-}" ]; then
    for i in "${!runs[@]}"; do
        (cd $work && OMP_NUM_THREADS=2 setsid nohup timeout 400 "$dv" evaluate --checkpoint "${lasts[$i]}" --device cuda \
            > eval-${runs[$i]}.txt 2>&1 &)
    done
fi
