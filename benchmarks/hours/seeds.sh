#!/usr/bin/env bash
# Paper-size G2P runs that differ only in their [train] seed, side by side on one GPU, for an
# ensemble (issue 5). Run from the repository root on the device machine:
#   SEEDS="1 2 3 4" SEEDS_BUDGET_S=1150 benchmarks/hours/seeds.sh $OUT
# starts `run.sh g2p` in the background for each seed (runs g2p-s<seed>, label smoothing 0.1,
# dropout 0.05, 20,000 iterations, 4 libtorch threads each; G2P_DEV_FRACTION, G2P_STEPS and
# G2P_THREADS pass through; the seeds in REVERSE_SEEDS train right to left, for rescoring),
# then watches them until WATCH_S
# (default 560) has passed. At 240 s and again at 360 s it projects the end of the slowest run
# from its pace over the last 120 s and, while that lies beyond SEEDS_BUDGET_S after the start,
# stops the highest-numbered left-to-right run still going (a right-to-left one only if none is
# left), assuming the GPU's throughput is shared by the runs left, so that the rest end within
# the device time. SEEDS_BUDGET_S=auto takes HOLD_S (default 1,800) less the machine's uptime
# and RESERVE_S (default 400, for the evaluations). MPS=1 starts the CUDA multi-process service
# first, so that the runs' kernels share the GPU at once instead of taking turns (off again if a
# client cannot start under it). Then
#   G2P_WAIT_S=… ENSEMBLE_RUNS="g2p-s1 …" benchmarks/hours/run.sh ensemble $OUT
# scores each member and the ensemble.
set -uo pipefail
out=$1
here=$(cd "$(dirname "$0")/../.." && pwd)
work=${WORK:-/root/dvwork}
mkdir -p "$out"
stamp() { echo "[$(date +%T)] $*" | tee -a "$out/phases.txt"; }
until_s() { local left=$((t0 + $1 - $(date +%s))); [ $left -gt 0 ] && sleep $left; }
t0=$(date +%s)
budget=${SEEDS_BUDGET_S:-1150}
if [ "$budget" = auto ]; then
    up=$(cut -d. -f1 /proc/uptime)
    budget=$(( ${HOLD_S:-1800} - up - ${RESERVE_S:-400} ))
    # an uptime longer than a start takes is not this hold's: keep the default
    [ $up -gt 1200 ] && budget=1150
    stamp "uptime $up s: budget $budget s"
fi
if [ -n "${MPS:-}" ]; then
    source "$here/benchmarks/device_env.sh"
    mps_on "$out/phases.txt"
fi
seeds=(${SEEDS:-1 2 3 4})
for s in "${seeds[@]}"; do
    rev=; [[ " ${REVERSE_SEEDS:-} " == *" $s "* ]] && rev=1
    G2P_REVERSE=$rev G2P_RUN=g2p-s$s G2P_SEED=$s G2P_DROPOUT=0.05 G2P_SMOOTHING=0.1 G2P_STEPS=${G2P_STEPS:-20000} \
        G2P_THREADS=${G2P_THREADS:-4} G2P_BG=1 NO_PACK=1 G2P_DEV_FRACTION=${G2P_DEV_FRACTION:-0.05} "$here/benchmarks/hours/run.sh" g2p "$out"
done
# steps done by run r so far (0 before its first log line)
steps_of() {
    local n; n=$(tail -1 "$work/$1/metrics.jsonl" 2>/dev/null | sed -n 's/.*"step":\([0-9]*\).*/\1/p')
    echo "${n:-0}"
}
alive=("${seeds[@]}")
prev_check=0 prev_steps=0
for check in 120 240 360; do
    until_s $check
    for s in "${alive[@]}"; do stamp "g2p-s$s: step $(steps_of g2p-s$s) after $check s"; done
    slowest=$(for s in "${alive[@]}"; do steps_of g2p-s$s; done | sort -n | head -1)
    # the pace since the last check, not from the start (which holds the runs' start-up)
    if [ $prev_check -gt 0 ] && [ "$slowest" -gt "$prev_steps" ]; then
        n=${#alive[@]}
        while [ ${#alive[@]} -gt 1 ]; do
            # with fewer runs each goes faster by n / runs left
            end=$(( check + (${G2P_STEPS:-20000} - slowest) * (check - prev_check) * ${#alive[@]} / ((slowest - prev_steps) * n) ))
            [ $end -gt $budget ] || break
            # the highest-numbered left-to-right run (right-to-left runs are the rescorers)
            last=${alive[${#alive[@]}-1]}
            for s in "${alive[@]}"; do [[ " ${REVERSE_SEEDS:-} " == *" $s "* ]] || last=$s; done
            pkill -f "config [g]2p-s$last.toml"
            stamp "projected end at $end s > $budget s with ${#alive[@]} runs: stopped g2p-s$last"
            kept=(); for s in "${alive[@]}"; do [ "$s" = "$last" ] || kept+=("$s"); done
            alive=("${kept[@]}")
        done
    fi
    prev_check=$check prev_steps=$(for s in "${alive[@]}"; do steps_of g2p-s$s; done | sort -n | head -1)
done
for s in "${alive[@]}"; do echo -n "g2p-s$s "; done > "$work/ensemble-runs.txt"   # `run.sh ensemble` reads it
until_s ${WATCH_S:-560}
for s in "${alive[@]}"; do stamp "g2p-s$s: step $(steps_of g2p-s$s) after $(($(date +%s) - t0)) s"; done
stamp "running: ${alive[*]}"
