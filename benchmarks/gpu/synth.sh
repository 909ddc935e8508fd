#!/usr/bin/env bash
# dv synth on the GPU (kernel 1) and on the CPU with the same voice, text and seed (issue 9); the
# two WAVs must be identical. On the device, from the repo root:
#   benchmarks/gpu/synth.sh .carry/dv.xz .carry/voice-text .carry/cmudict.dict $OUT
set -uo pipefail
dvxz=$1 voice=$2 dict=$3 out=$4
source "$(dirname "$0")/../device_env.sh"
device_env "$dvxz" "$out"
text="The quick brown fox jumps over the lazy dog."
for d in cuda cpu; do
    "$dv" synth --voice "$voice" --cmudict "$dict" --device $d --seed 3 --out "$out/synth-$d.wav" "$text" 2>&1 \
        | grep -E "^cuda:|wrote" | tee "$out/synth-$d.txt"
done
cmp -s "$out/synth-cuda.wav" "$out/synth-cpu.wav" && echo "WAVs identical" || echo "WAVs differ: $(cmp "$out/synth-cuda.wav" "$out/synth-cpu.wav" | head -1)"
rm -rf "$out/bin" "$out/lib"
