#!/usr/bin/env bash
# Compact G2P variants side by side on one GPU under MPS (issue 5): which sizes and dropouts do
# best within the 8 MB the shipped model may take on disk, stored in half precision. From the
# repository root on the device machine (carry .carry/dv.xz and .carry/cmudict.dict):
#   VARIANTS=$'c160 160 64 0.05 0\nc240 240 64 0.1 0' bash benchmarks/g2p/compact_sweep.sh start $OUT
#   WAIT_S=300 bash benchmarks/g2p/compact_sweep.sh finish $OUT
# VARIANTS: one per line, "name hidden embed dropout seed".
# start: starts MPS and one `dv train` per variant in the background: the shipped configuration
# (trainers/train/configs/g2p-compact-attention.toml) on the GPU with the variant's sizes,
# THREADS libtorch threads each (default 2); then reports their steps until WATCH_S (default 540).
# finish: waits until the runs end (at most WAIT_S; one still going is stopped and its newest
# checkpoints are used), writes each run's mean of its last two checkpoints in half precision
# (`dv export --model-only --half`), scores each on the dev and the test words, all at once, and
# copies the one with the lowest dev WER (then dev PER) to $OUT/chosen.safetensors. Results in
# $OUT/sweep.txt; each run's metrics, config and log tail in $OUT/runs.tgz.
set -uo pipefail
mode=$1 out=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/benchmarks/device_env.sh"
work_env "$here" "$out"   # $work, $dv, DV_HOME, DV_CMUDICT
stamp() { echo "[$(date +%T)] $*" | tee -a "$out/sweep.txt"; }
step_of() { tail -1 "$work/$1/metrics.jsonl" 2>/dev/null | sed -n 's/.*"step":\([0-9]*\).*/\1/p'; }
case $mode in
start)
    t0=$(date +%s)
    mps_on "$out/sweep.txt"
    printf '%s\n' "$VARIANTS" | awk 'NF == 5' > "$work/variants.txt"
    while read -r name hidden embed dropout seed; do
        sed -e "s/^hidden = .*/hidden = $hidden/" -e "s/^embed = .*/embed = $embed/" \
            -e "s/^dropout = .*/dropout = $dropout/" -e 's/^device = .*/device = "cuda"/' \
            -e "s/^threads_per_rank = .*/threads_per_rank = ${THREADS:-2}/" \
            -e "s#runs/g2p-compact-attention#$work/$name#g" -e "s/^run_name = .*/run_name = \"$name\"/" \
            -e "/^\[train\]/,/^\[/ s/^seed = .*/seed = $seed/" \
            "$here/trainers/train/configs/g2p-compact-attention.toml" > "$work/$name.toml"
        (cd "$work" && setsid nohup "$dv" train --config "$name.toml" > "$name.log" 2>&1 &)
        stamp "$name: hidden $hidden, embed $embed, dropout $dropout, seed $seed: started"
    done < "$work/variants.txt"
    while [ $(( $(date +%s) - t0 )) -lt $(( ${WATCH_S:-540} - 60 )) ]; do
        sleep 60
        stamp "steps: $(while read -r name _; do echo -n "$name $(step_of $name)  "; done < "$work/variants.txt")"
    done
    ;;
finish)
    names=($(awk '{print $1}' "$work/variants.txt"))
    going() { for r in "${names[@]}"; do pgrep -f "config [${r:0:1}]${r:1}.toml" > /dev/null && return 0; done; return 1; }
    deadline=$(( $(date +%s) + ${WAIT_S:-300} ))
    while going && [ "$(date +%s)" -lt $deadline ]; do sleep 2; done
    for r in "${names[@]}"; do
        if pgrep -f "config [${r:0:1}]${r:1}.toml" > /dev/null; then
            pkill -f "config [${r:0:1}]${r:1}.toml"; sleep 3; stamp "$r: stopped at step $(step_of $r)"
        fi
        steps=($(ls "$work/$r/checkpoints"/step-*.safetensors | tail -2))
        avg=(); [ ${#steps[@]} = 2 ] && avg=(--average "${steps[1]}")
        "$dv" export --checkpoint "${steps[0]}" "${avg[@]}" --model-only "$work/$r-avg2.safetensors" --half | tee -a "$out/sweep.txt"
    done
    for r in "${names[@]}"; do
        for part in dev test; do
            flag=; [ $part = dev ] && flag=--dev
            OMP_NUM_THREADS=2 timeout "${EVAL_S:-300}" "$dv" evaluate --checkpoint "$work/$r-avg2.safetensors" $flag \
                --device cuda > "$work/eval-$r-$part.txt" 2>&1 &
        done
    done
    wait
    for r in "${names[@]}"; do
        for part in dev test; do stamp "$r $part: $(grep PER "$work/eval-$r-$part.txt")"; done
    done
    # lowest dev WER, then dev PER
    chosen=$(for r in "${names[@]}"; do
        sed -n "s/.*beam [0-9]*: PER \([0-9.]*\)%, WER \([0-9.]*\)%.*/\2 \1 $r/p" "$work/eval-$r-dev.txt"
    done | sort -n -k1,1 -k2,2 | head -1 | awk '{print $3}')
    stamp "chosen on the dev words: $chosen ($(stat -c %s "$work/$chosen-avg2.safetensors") bytes)"
    cp "$work/$chosen-avg2.safetensors" "$out/chosen.safetensors"
    (cd "$work" && for r in "${names[@]}"; do tail -3 $r.log > $r.log-tail; done
     tar czf "$out/runs.tgz" $(for r in "${names[@]}"; do echo "$r/metrics.jsonl $r.toml $r.log-tail"; done))
    echo quit | nvidia-cuda-mps-control 2> /dev/null
    ;;
esac
