#!/usr/bin/env bash
# One device call for the record (benchmarks/serve.md, "Slots spread over every multiprocessor"):
# the kernel alone as `gpu_bench gpu-streams` runs it by default (MultiPlan::fastest: 40 streams per
# block, the most real-time streams in one wave: BENCH_STREAMS, default 5120,5280), with shared and
# with per-stream conditioning rows; the kernel alone as dv-serve now runs it for its slots
# (MultiPlan::for_streams: the fewest streams per block that hold the load in one wave;
# SPREAD="PER_BLOCK:STREAMS ...", per-stream rows); then dv-serve --slots SLOTS at LEVELS.
#   run(command="bash benchmarks/serve/spread.sh", carry=[".carry/gpu_bench.xz", ".carry/dv-serve.xz",
#       ".carry/cmudict.dict"])
source benchmarks/device_env.sh
bench_env .carry/gpu_bench.xz /tmp/bx > /dev/null 2>&1
bench() {  # NAME ARGS...
    local name=$1; shift
    $gpu_bench gpu-streams --presets none --voice inference/voices/slt --precision bf16 --steps 1638 "$@" \
        > $OUT/bench-$name.txt 2>&1
    echo "== kernel alone: $name"; grep -E "parity|^\| [0-9]" $OUT/bench-$name.txt
}
bench fastest-shared --streams ${BENCH_STREAMS:-5120,5280}
bench fastest-distinct --streams ${BENCH_STREAMS:-5120,5280} --distinct-conditioning
for s in ${SPREAD:-16:2112 32:4224}; do
    bench cols${s%%:*}-distinct --kernels cols --per-block ${s%%:*} --stages 3 --panel-bytes 0 \
        --streams ${s##*:} --distinct-conditioning
done
SLOTS=${SLOTS:-4224} KERNEL_RT=${KERNEL_RT:-5280} LEVELS="${LEVELS:-1 4096 4224}" DURATION=${DURATION:-15} \
    benchmarks/serve/gpu.sh /tmp/sg > /dev/null 2>&1
for f in summary.md server.log one.wav metrics-end.txt levels.jsonl; do cp /tmp/sg/$f $OUT/serve-$f 2>/dev/null; done
echo "== dv-serve --slots ${SLOTS:-4224}"; grep -E "kernel|ready|plan|streams per block" /tmp/sg/server.log | head -3
cat /tmp/sg/summary.md
