#!/usr/bin/env bash
# Issue 9, kernel 1c (`wavenet_chain`, the chain split by layers) on the GPU machine: a short
# smoke launch first (a hang costs SMOKE_S seconds, not the call), then parity and timing of
# every (layers per block, chain warps) beside kernel 1 (C = 16) in the same run.
#   benchmarks/gpu/chain.sh .carry/gpu_bench.xz $OUT [VOICE_DIR]
# (.carry/gpu_bench.xz: benchmarks/gpu/carry.sh.) CHAIN holds extra arguments for the sweep's
# `gpu_bench gpu-single`; VARIANTS and FEATURES below (FEATURES also needs dv: DV_XZ, default
# .carry/dv.xz).
set -uo pipefail
benchxz=$1 out=$2 voice=${3:-}
source "$(dirname "$0")/../device_env.sh"
bench_env "$benchxz" "$out"
echo "== smoke"
timeout "${SMOKE_S:-60}" "$gpu_bench" gpu-single --presets 20x64x128 --clusters 16 --helpers 8 --layers-per-block 8 \
    --split-warps 8 --precision bf16 --parity-steps 256 --seconds 0.25 --repeats 1 > "$out/smoke.txt" 2>&1
echo "rc=$?"; cat "$out/smoke.txt"
vargs=()
[ -n "$voice" ] && vargs=(--voice "$voice")
# VARIANTS: "name:DEFINES" words (DEFINES comma-separated, passed as DV_GPU_DEFINES); "base:" is the code as is.
for v in ${VARIANTS:-base:}; do
    name=${v%%:*} defs=${v#*:}
    echo "== sweep $name (${defs}) ${CHAIN:-}"
    DV_GPU_DEFINES=${defs//,/ } timeout "${SWEEP_S:-300}" "$gpu_bench" gpu-single "${vargs[@]}" --json "$out/single-$name.jsonl" \
        --presets ${PRESETS:-20x64x128,40x64x256} --clusters 16 --helpers 8 --precision bf16 --parity-steps 512 --seconds ${SECONDS_AUDIO:-1} \
        --repeats ${REPEATS:-3} --profile ${CHAIN:-} > "$out/single-$name.txt" 2> "$out/single-$name.err"
    echo "rc=$?"; grep -E "chain blocks|FAIL|rror" "$out/single-$name.err" | head -20
    grep -E "chain warps|\| 16 \|" "$out/single-$name.txt"
done
# End to end: `dv synth --device cuda --bf16` on one carried utterance (UTT of FEATURES) with the
# voice: the default plan (the layer-split kernel for r = 64) and kernel 1 (--cluster 16).
if [ -n "${FEATURES:-}" ] && [ -n "$voice" ]; then
    device_env "${DV_XZ:-.carry/dv.xz}" "$out"
    for plan in default "--cluster 16"; do
        echo "== dv synth --device cuda --bf16 ($plan)"
        extra=(); [ "$plan" != default ] && extra=($plan)
        timeout 200 "$dv" synth --voice "$voice" --features "$FEATURES" --utterance "${UTT:-slt_fortune_00001}" \
            --device cuda --bf16 "${extra[@]}" --seed 3 --out "$out/synth-${plan// /}.wav" 2>&1 | grep -E "^cuda:|wrote" \
            | tee "$out/synth-${plan// /}.txt"
    done
    rm -f "$out"/synth-*.wav
fi
for f in "$out"/ptx/*.ptx; do
    [ -e "$f" ] || continue
    echo "$(basename "$f"): $(ptxas -arch=sm_90 -v "$f" -o /dev/null 2>&1 | grep -E 'registers|spill' | tr '\n' ' ')"
done > "$out/ptxas.txt"
grep -i chain "$out/ptxas.txt" | head
rm -rf "$out/bin" "$out/lib"
tar -C "$out" -czf "$out/all.tgz" --exclude=all.tgz . 2>/dev/null
