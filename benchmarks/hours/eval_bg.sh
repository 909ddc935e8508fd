#!/usr/bin/env bash
# After `seeds.sh` (issue 5), on the same warm machine: waits until the seeds' runs have ended (at
# most WAIT_S seconds; a run still going then is stopped and its newest checkpoint used), then
# decodes the 5,843 test words and the dev words with all of them as an ensemble (beam 5), side by
# side, into $OUT/ensemble.txt; MEMBERS=1 also scores each run alone on the test words at the same
# time. Right-to-left runs ([data] reverse) are left out of the ensemble; with any, they rescore
# each word's 5-best list (`--rescore-with`) in the same pass, for every weight of RESCORE_WEIGHT
# (default 0,0.25,0.5,1; 0 is the ensemble alone). Each run's metrics and config go into
# $OUT/runs.tgz.
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
done
(cd $work && tar czf "$out/runs.tgz" $(for r in "${runs[@]}"; do echo "$r/metrics.jsonl $r.toml"; done))
printf '%s\n' "${lasts[@]}" | tee "$out/lasts.txt"
l2r=(); r2l=()
for i in "${!runs[@]}"; do
    if grep -q "^reverse = true" "$work/${runs[$i]}.toml"; then r2l+=("${lasts[$i]}"); else l2r+=("${lasts[$i]}"); fi
done
withs=(); for ck in "${l2r[@]:1}"; do withs+=(--with "$ck"); done
rescore=(); for ck in "${r2l[@]}"; do rescore+=(--rescore-with "$ck"); done
[ ${#r2l[@]} -gt 0 ] && rescore+=(--rescore-weight "${RESCORE_WEIGHT:-0,0.25,0.5,1}")
stamp() { echo "[$(date +%T)] $*" | tee -a "$out/ensemble.txt"; }
stamp "ensemble of ${#l2r[@]} left-to-right, ${#r2l[@]} right-to-left rescoring"
for part in test dev; do
    flag=; [ $part = dev ] && flag=--dev
    OMP_NUM_THREADS=4 timeout "${EVAL_S:-300}" "$dv" evaluate --checkpoint "${l2r[0]}" "${withs[@]}" "${rescore[@]}" $flag \
        --device cuda > "$work/ensemble-$part.txt" 2>&1 &
done
if [ -n "${MEMBERS:-}" ]; then
    for i in "${!runs[@]}"; do
        OMP_NUM_THREADS=2 timeout "${EVAL_S:-300}" "$dv" evaluate --checkpoint "${lasts[$i]}" --device cuda \
            > "$work/eval-${runs[$i]}.txt" 2>&1 &
    done
fi
wait
for part in test dev; do stamp "ensemble, $part words:"; grep "PER" "$work/ensemble-$part.txt" | tee -a "$out/ensemble.txt"; done
if [ -n "${MEMBERS:-}" ]; then
    for r in "${runs[@]}"; do stamp "$r alone: $(grep PER "$work/eval-$r.txt")"; done
fi
