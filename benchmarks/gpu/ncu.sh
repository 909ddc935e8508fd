#!/usr/bin/env bash
# Nsight Compute on one launch of each dv-gpu kernel (issue 9), after the parity and warm-up
# launches: speed of light, memory, warp stalls, scheduler. Run on the device like run.sh:
#   benchmarks/gpu/ncu.sh .carry/gpu_bench.xz $OUT
set -uo pipefail
benchxz=$1 out=$2
source "$(dirname "$0")/../device_env.sh"
gpu_bench_env "$benchxz" "$out"
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats
          --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis)
# Kernel 2: 6 parity launches and 1 warm-up precede the first timed launch. NCU_MULTI_ARGS picks
# the source and launch shape (default: the panel kernel at 32 streams per block), NCU_MULTI_K the
# entry point; NCU_SKIP_SINGLE=1 leaves kernel 1 out.
timeout 200 ncu --clock-control none -k regex:${NCU_MULTI_K:-wavenet_multi} --launch-skip 7 --launch-count 1 "${sections[@]}" \
    "$gpu_bench" gpu-streams --presets ${NCU_MULTI:-20x64x128} --precision bf16 --streams ${NCU_STREAMS:-4224} --steps 64 --repeats 1 \
    --parity-steps 32 ${NCU_MULTI_ARGS:---kernels panels} > "$out/ncu_multi.txt" 2>&1
echo "multi rc=$?"
# Kernel 1: 2 parity launches and 1 warm-up precede the first timed launch.
[ "${NCU_SKIP_SINGLE:-0}" = 1 ] || timeout 200 ncu --clock-control none -k regex:wavenet_single --launch-skip 3 --launch-count 1 "${sections[@]}" \
    "$gpu_bench" gpu-single --presets ${NCU_SINGLE:-40x64x256} --precision f32 --clusters 16 --seconds 0.05 \
    --repeats 1 --parity-steps 32 > "$out/ncu_single.txt" 2>&1
echo "single rc=$?"
rm -rf "$out/bin" "$out/lib"
grep -E "Duration|Throughput|Stall|Warp Cycles|Issued Ipc|Hit Rate|Eligible|Active Warps|No Eligible|L2|DRAM" "$out/ncu_multi.txt" | head -60
echo ----
grep -E "Duration|Throughput|Stall|Warp Cycles|Issued Ipc|Eligible|No Eligible" "$out/ncu_single.txt" | head -40
