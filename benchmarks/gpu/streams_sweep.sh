#!/usr/bin/env bash
# Kernel 2 on the GPU machine, several launch shapes in one call: each line of $CONFIGS is
#   PRESET KERNELS PER_BLOCK THREADS STAGES STREAMS
# (KERNELS: a comma list of tiles, tiles-f16, tiles-wg, tiles-wg-f16, panels; STREAMS comma-separated) and runs one
# `gpu_bench gpu-streams` (bfloat16, parity first, then timings and a profile). Run from the repo
# root with the xz-compressed stripped GPU bench (benchmarks/gpu/carry.sh) in .carry/:
#   CONFIGS="20x64x128 tiles 64 256 2 4224,8448" benchmarks/gpu/streams_sweep.sh .carry/gpu_bench.xz $OUT
# STEPS (512) samples per timed launch, PARITY (256) samples compared with the CPU reference.
# VOICE=DIR adds a voice package (trained weights) to every line; PRESET `none` runs it alone.
# STREAMS_ARGS: more `gpu_bench gpu-streams` flags for every line (e.g. --force-timing).
set -uo pipefail
benchxz=$1 out=$2
source "$(dirname "$0")/../device_env.sh"
bench_env "$benchxz" "$out"   # $gpu_bench, PTX under $out/ptx, gpus.csv
while read -r preset kernels per_block threads stages streams; do
    [ -z "$preset" ] && continue
    echo "== $preset $kernels per_block=$per_block threads=$threads stages=$stages streams=$streams" | tee -a "$out/streams.txt"
    timeout "${STREAMS_TIMEOUT:-150}" "$gpu_bench" gpu-streams --presets "$preset" --precision bf16 \
        --kernels "$kernels" --per-block "$per_block" --threads "$threads" --stages "$stages" \
        --streams "$streams" --steps "${STEPS:-512}" --parity-steps "${PARITY:-256}" --repeats 3 \
        ${VOICE:+--voice "$VOICE"} ${STREAMS_ARGS:-} --json "$out/streams.jsonl" >> "$out/streams.txt" 2>> "$out/streams.err"
    echo "rc=$?" | tee -a "$out/streams.txt"
done <<< "$CONFIGS"
for f in "$out"/ptx/*.ptx; do
    [ -e "$f" ] || continue
    arch=$(grep -m1 -o 'sm_90a\?' "$f")  # the wgmma kernels target sm_90a
    echo "$(basename "$f"): $(ptxas -arch="$arch" -v "$f" -o /dev/null 2>&1 | grep -E 'registers|spill|C75' | tr '\n' ' ')"
done > "$out/ptxas.txt"
rm -rf "$out/bin" "$out/lib" "$out/ptx"
cat "$out/streams.txt" | tail -c 7000
tail -c 1500 "$out/streams.err"
