#!/usr/bin/env bash
# dv synth on the GPU (kernel 1) and on the CPU with the same voice, text and seed (issue 9); the
# two WAVs must be identical. On the device, from the repo root:
#   benchmarks/gpu/synth.sh .carry/dv.xz .carry/voice-text .carry/cmudict.dict $OUT
set -uo pipefail
dvxz=$1 voice=$2 dict=$3 out=$4
mkdir -p "$out/bin" "$out/lib"
xz -dc "$dvxz" > "$out/bin/dv" && chmod +x "$out/bin/dv"
site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
ln -sf "$site/nvidia/nccl/lib/libnccl.so.2" "$out/lib/libnccl.so"
export LD_LIBRARY_PATH="$out/lib:$site/torch/lib:$site/nvidia/cu13/lib:$site/nvidia/nccl/lib:${LD_LIBRARY_PATH:-}"
text="The quick brown fox jumps over the lazy dog."
for d in cuda cpu; do
    "$out/bin/dv" synth --voice "$voice" --cmudict "$dict" --device $d --seed 3 --out "$out/synth-$d.wav" "$text" 2>&1 \
        | grep -E "^cuda:|wrote" | tee "$out/synth-$d.txt"
done
cmp -s "$out/synth-cuda.wav" "$out/synth-cpu.wav" && echo "WAVs identical" || echo "WAVs differ: $(cmp "$out/synth-cuda.wav" "$out/synth-cpu.wav" | head -1)"
rm -rf "$out/bin" "$out/lib"
