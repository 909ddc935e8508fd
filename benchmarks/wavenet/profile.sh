#!/usr/bin/env bash
# Where a WaveNet training step's time goes (issue 7): PyTorch replica of the step in several
# formulations (ops.py), then dv train with [train] profile = true at batch 1 and 8 on one GPU.
#   FEATURES=.carry/features benchmarks/wavenet/profile.sh .carry/dv.xz $OUT
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$2
python3 "$here/ops.py" "$out/ops.json" 2>&1 | tee "$out/ops.txt"
PROFILE=true TIMING="40 64 256 false 1 1 40 64 256 false 8 1 40 64 256 true 8 1" "$here/gpu.sh" "$1" "$out/dv"
grep -h "ms/step" "$out"/dv/t_*/stderr.txt | tail -n 20
