#!/usr/bin/env bash
# Nsight Compute on one launch of the many-stream kernel with per-instruction stall sampling
# (issue 9): warp states, scheduler, speed of light, and the SASS source page as CSV, so the
# instructions the warps wait on can be ranked. Run on the device from the repo root:
#   NCU_ARGS="--kernels tiles-wg --per-block 64 --threads 256 --stages 2" benchmarks/gpu/ncu_source.sh .carry/gpu_bench.xz $OUT
# (NCU_KERNEL=wavenet_cols NCU_ARGS="--kernels cols --per-block 40" for kernel 2e)
set -uo pipefail
benchxz=$1 out=$2
source "$(dirname "$0")/../device_env.sh"
gpu_bench_env "$benchxz" "$out"
# 6 parity launches and 1 warm-up precede the first timed launch.
timeout 300 ncu --clock-control none -k regex:${NCU_KERNEL:-wavenet_tiles} --launch-skip 7 --launch-count 1 \
    --section WarpStateStats --section SourceCounters --section SpeedOfLight --section SchedulerStats \
    -o "$out/k" -f "$gpu_bench" gpu-streams --presets "${NCU_PRESET:-20x64x128}" --precision bf16 \
    --streams "${NCU_STREAMS:-8448}" --steps 64 --repeats 1 --parity-steps 32 ${NCU_ARGS:-} > "$out/ncu_run.txt" 2>&1
echo "ncu rc=$?"
ncu -i "$out/k.ncu-rep" --page details > "$out/details.txt" 2>&1
ncu -i "$out/k.ncu-rep" --page source --csv --print-source sass > "$out/sass.csv" 2>&1
gzip -f "$out/sass.csv"
rm -rf "$out/bin" "$out/lib" "$out/k.ncu-rep"
grep -E "Stall|Warp Cycles|Issued Ipc|Eligible|No Eligible|Throughput|Duration" "$out/details.txt" | head -50
