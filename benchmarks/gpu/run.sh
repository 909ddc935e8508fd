#!/usr/bin/env bash
# Issue 9 on the GPU machine: both dv-gpu kernels, parity with the CPU reference, then timings.
# Run from the repo root on the device with the xz-compressed stripped GPU bench (dv-gpu's example
# `gpu_bench`, benchmarks/gpu/carry.sh) (and optionally a voice package) in .carry/:
#   benchmarks/gpu/run.sh .carry/gpu_bench.xz $OUT [VOICE_DIR]
# SINGLE / STREAMS hold extra arguments for `gpu_bench gpu-single` / `gpu-streams`
# (SKIP_SINGLE=1 / SKIP_STREAMS=1 leave one out). Logs and JSON lines land in $OUT.
set -uo pipefail
benchxz=$1 out=$2 voice=${3:-}
source "$(dirname "$0")/../device_env.sh"
bench_env "$benchxz" "$out"
vargs=()
[ -n "$voice" ] && vargs=(--voice "$voice")
if [ "${SKIP_SINGLE:-0}" != 1 ]; then
    echo "== gpu_bench gpu-single ${SINGLE:-}"
    timeout "${SINGLE_TIMEOUT:-200}" "$gpu_bench" gpu-single "${vargs[@]}" --json "$out/single.jsonl" ${SINGLE:-} \
        > "$out/single.txt" 2> "$out/single.err"
    echo "rc=$?"; tail -3 "$out/single.err"
fi
if [ "${SKIP_STREAMS:-0}" != 1 ]; then
    echo "== gpu_bench gpu-streams ${STREAMS:-}"
    timeout "${STREAMS_TIMEOUT:-250}" "$gpu_bench" gpu-streams --json "$out/streams.jsonl" ${STREAMS:-} \
        > "$out/streams.txt" 2> "$out/streams.err"
    echo "rc=$?"; tail -3 "$out/streams.err"
fi
# Registers, spills and shared memory of every specialization compiled above.
for f in "$out"/ptx/*.ptx; do
    [ -e "$f" ] || continue
    echo "$(basename "$f"): $(ptxas -arch=sm_90 -v "$f" -o /dev/null 2>&1 | grep -E 'registers|spill' | tr '\n' ' ')"
done > "$out/ptxas.txt"
rm -rf "$out/bin" "$out/lib"
tar -C "$out" -czf "$out/all.tgz" --exclude=all.tgz . 2>/dev/null
cat "$out/single.txt" "$out/streams.txt" 2>/dev/null | tail -c 9000
