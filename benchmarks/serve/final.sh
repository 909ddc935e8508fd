#!/usr/bin/env bash
# One device call for the record (benchmarks/serve.md, "third measurement"): the GPU conditioning
# network's conformance case (the carried dv-gpu test binary, .carry/conformance/gpu.xz from
# benchmarks/conformance/pack.sh), the kernel alone at the server's launch length with shared and
# with per-stream conditioning rows, then dv-serve at LEVELS and, as the ablation, with the
# conditioning network on the CPU at AB_LEVELS.
#   run(command="bash benchmarks/serve/final.sh", carry=[".carry/gpu_bench.xz", ".carry/dv-serve.xz",
#       ".carry/cmudict.dict", ".carry/conformance"])
here=$(pwd)
source benchmarks/device_env.sh
bench_env .carry/gpu_bench.xz /tmp/bx > /dev/null 2>&1
if [ -f .carry/conformance/gpu.xz ]; then
    xz -dc .carry/conformance/gpu.xz > /tmp/gpu-it && chmod +x /tmp/gpu-it
    /tmp/gpu-it conformance::gpu_conditioning --nocapture --test-threads 1 2>&1 | grep -E "^conformance|^test " | tee $OUT/conformance.txt
fi
for rows in shared distinct; do
    flag=(); [ $rows = distinct ] && flag=(--distinct-conditioning)
    $gpu_bench gpu-streams --presets none --voice inference/voices/slt --precision bf16 \
        --streams ${BENCH_STREAMS:-2080,3080,4120} --steps 1638 "${flag[@]}" > $OUT/bench-$rows.txt 2>&1
    echo "== kernel alone, $rows conditioning rows"; grep -A5 "^| streams" $OUT/bench-$rows.txt
done
run() {  # NAME LEVELS [ENV...]
    local name=$1 levels=$2; shift 2
    env "$@" KERNEL_RT=5120 LEVELS="$levels" DURATION=${DURATION:-20} benchmarks/serve/gpu.sh /tmp/sg-$name > /dev/null 2>&1
    for f in summary.md launches.txt server.log one.wav; do cp /tmp/sg-$name/$f $OUT/$name-$f 2>/dev/null; done
    echo "== $name"; sed -n '5,20p' /tmp/sg-$name/summary.md; grep -i "conditioning network" /tmp/sg-$name/server.log | head -1
}
run gpu "${LEVELS:-1 1024 2048 3072 4096}"
[ -n "${AB_LEVELS-2048}" ] && run cpu "${AB_LEVELS:-2048}" DV_SERVE_CPU_CONDITIONING=1
