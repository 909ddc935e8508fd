#!/usr/bin/env bash
# A/B on one device call: the kernel alone at the server's launch length (1638 steps), then
# dv-serve as it starts by default at LEVELS, and with AB_ENV set (default
# DV_SERVE_CPU_CONDITIONING=1, the conditioning network on the CPU and windows staged by the host)
# at AB_LEVELS. GPU clocks sampled throughout. Copies the
# summaries to $OUT. Knobs: LEVELS (default "2048 4096"), AB_LEVELS (default "4096"), AB_ENV,
# DURATION (15), BENCH_STREAMS (2080,4120), BENCH_ARGS (more `gpu_bench gpu-streams` flags),
# SKIP_BENCH=1 (the servers only), SLOTS (dv-serve's --slots, gpu.sh's default 4096).
here=$(pwd)
source benchmarks/device_env.sh
bench_env .carry/gpu_bench.xz /tmp/bx > /dev/null 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,utilization.gpu --format=csv,noheader -lms 1000 > $OUT/clocks.csv &
smi=$!
# The kernel alone, as it starts and with AB_ENV (BENCH_ARGS: e.g. --distinct-conditioning).
for which in $([ "${SKIP_BENCH:-0}" = 0 ] && echo default ab); do
    e=(); [ $which = ab ] && e=(${AB_ENV:-DV_SERVE_CPU_CONDITIONING=1})
    env "${e[@]}" $gpu_bench gpu-streams --presets none --voice inference/voices/slt --precision bf16 \
        --streams ${BENCH_STREAMS:-2080,4120} --steps 1638 ${BENCH_ARGS:-} > $OUT/bench1638-$which.txt 2>&1
    echo "== kernel alone, $which"; grep -A4 "^| streams" $OUT/bench1638-$which.txt
done
run() {  # NAME LEVELS [ENV...]
    local name=$1 levels=$2; shift 2
    env "$@" KERNEL_RT=5120 LEVELS="$levels" DURATION=${DURATION:-15} benchmarks/serve/gpu.sh /tmp/sg-$name > $OUT/run-$name.txt 2>&1
    for f in summary.md launches.txt server.log; do cp /tmp/sg-$name/$f $OUT/$name-$f 2>/dev/null; done
    echo "== $name"; sed -n '2p;5,20p' /tmp/sg-$name/summary.md; grep -i "conditioning network\|panic" /tmp/sg-$name/server.log | head -2
}
run default "${LEVELS:-2048 4096}"
[ -n "${AB_LEVELS-4096}" ] && run ab "${AB_LEVELS:-4096}" ${AB_ENV:-DV_SERVE_CPU_CONDITIONING=1}
kill $smi
