#!/usr/bin/env bash
# Builds the GPU bench here (dv-gpu's example `gpu_bench`: `gpu-single`, `gpu-streams`,
# `gpu-emulate`; `dv bench` until issue 44) and carries it, stripped and xz-compressed, as
# .carry/gpu_bench.xz for the device scripts (benchmarks/gpu/*.sh, benchmarks/serve/*.sh; the GPU
# machine has no Rust toolchain). It links no libtorch, and loads the CUDA driver and NVRTC at run
# time. The build, in the dev profile as `dv` is (PROFILE=release for a release build):
#   cargo build -p dv-gpu --example gpu_bench
# Run from anywhere in the repository; prints the size.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/deepvoice-rs/target} LIBTORCH_USE_PYTORCH=1
profile=${PROFILE:-debug}
flag=(); [ "$profile" = release ] && flag=(--release)
cargo build -p dv-gpu --example gpu_bench "${flag[@]}"
exe=$CARGO_TARGET_DIR/$profile/examples/gpu_bench
if ldd "$exe" | grep -E "torch|c10"; then echo "gpu_bench links libtorch" >&2; exit 1; fi
mkdir -p .carry
strip -o .carry/gpu_bench "$exe"
xz -T2 -6 -f .carry/gpu_bench
echo "$exe -> .carry/gpu_bench.xz ($(du -k .carry/gpu_bench.xz | cut -f1) KiB, $(git rev-parse --short HEAD))"
