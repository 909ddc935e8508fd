#!/usr/bin/env bash
# Kernel 1 and 2 parity (and kernel-2 timing) on trained weights (issue 9): trains WaveNets on the
# carried embedded-corpus features for TRAIN_S (230) s each, side by side on one GPU
# (benchmarks/wavenet/gpu.sh; SIZES lists them, default "20x64x128 40x64x256"), exports each as a
# voice package, then runs `gpu_bench gpu-streams` (KERNELS, default tiles,tiles-f16; 32 streams per
# block, 4,224 streams) and `gpu_bench gpu-single` on every voice (.carry/dv.xz trains and exports,
# .carry/gpu_bench.xz from benchmarks/gpu/carry.sh benches). EXTRA_CONFIGS, if set, runs one
# more streams_sweep.sh on random weights. Everything is packed into $OUT/all.tgz. On the device:
#   bash benchmarks/gpu/trained_parity.sh
set -u
sizes=(${SIZES:-20x64x128 40x64x256})
for z in "${sizes[@]}"; do
    FEATURES=.carry/features TIMING=x TRAIN_S=${TRAIN_S:-230} TRAIN_SIZE="${z//x/ } true" \
        benchmarks/wavenet/gpu.sh .carry/dv.xz $OUT/w$z > $OUT/w$z.log 2>&1 &
done
wait   # each gpu.sh ends after its training (TRAIN_S) and export
for z in "${sizes[@]}"; do tail -2 $OUT/w$z.log; ls $OUT/w$z/voice; done
for z in "${sizes[@]}"; do
    VOICE=$OUT/w$z/voice CONFIGS="none ${KERNELS:-tiles,tiles-f16} 32 256 2 4224" STREAMS_TIMEOUT=120 \
        benchmarks/gpu/streams_sweep.sh .carry/gpu_bench.xz $OUT/k$z > /dev/null
    grep -E "parity|^\| [0-9]" $OUT/k$z/streams.txt
done
if [ -n "${EXTRA_CONFIGS:-}" ]; then
    CONFIGS=$EXTRA_CONFIGS STREAMS_TIMEOUT=150 benchmarks/gpu/streams_sweep.sh .carry/gpu_bench.xz $OUT/kx > /dev/null
    grep -E "^==|parity|^\| [0-9]|cycles per step" $OUT/kx/streams.txt; cat $OUT/kx/ptxas.txt
fi
source benchmarks/device_env.sh
gpu_bench_env .carry/gpu_bench.xz $OUT/s1
for z in "${sizes[@]}"; do
    timeout 100 $gpu_bench gpu-single --presets none --voice $OUT/w$z/voice --precision both --clusters 16 \
        --helpers 8 --json $OUT/single.jsonl 2>&1 | grep -E "^\| /"
done | tee $OUT/single.txt
rm -rf $OUT/s1 $OUT/w*/all.tgz $OUT/w*/train/ck
cd $OUT && tar czf /tmp/all.tgz . && find . -mindepth 1 -delete && mv /tmp/all.tgz .
