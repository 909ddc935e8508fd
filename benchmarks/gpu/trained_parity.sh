#!/usr/bin/env bash
# Kernel 1 and 2 parity (and kernel-2 timing) on trained weights (issue 9): trains a (20, 64, 128)
# and a (40, 64, 256) WaveNet side by side on one GPU for TRAIN_S=230 s each on the carried
# embedded-corpus features (benchmarks/wavenet/gpu.sh), exports both as voice packages, then runs
# `dv bench gpu-streams` (tiles, tiles-f16) and `dv bench gpu-single` on them. On the device:
#   bash benchmarks/gpu/trained_parity.sh     (writes under $OUT)
set -u
(FEATURES=.carry/features TIMING=x TRAIN_S=230 TRAIN_SIZE="20 64 128 true" benchmarks/wavenet/gpu.sh .carry/dv.xz $OUT/w20 > $OUT/w20.log 2>&1 &)
FEATURES=.carry/features TIMING=x TRAIN_S=230 TRAIN_SIZE="40 64 256 true" benchmarks/wavenet/gpu.sh .carry/dv.xz $OUT/w40 > $OUT/w40.log 2>&1
while pgrep -f "w20/train/run.toml" >/dev/null || [ ! -e $OUT/w20/all.tgz ]; do sleep 2; done
tail -3 $OUT/w20.log $OUT/w40.log; ls $OUT/w20/voice $OUT/w40/voice
VOICE=$OUT/w20/voice CONFIGS=$'none tiles,tiles-f16 32 256 2 4224\nnone tiles,tiles-f16 64 256 2 8448' STREAMS_TIMEOUT=120 benchmarks/gpu/streams_sweep.sh .carry/dv.xz $OUT/k20 | grep -v "^$" | tail -30
VOICE=$OUT/w40/voice CONFIGS=$'none tiles,tiles-f16 32 256 2 4224' STREAMS_TIMEOUT=120 benchmarks/gpu/streams_sweep.sh .carry/dv.xz $OUT/k40 | grep -v "^$" | tail -20
source benchmarks/device_env.sh; device_env .carry/dv.xz $OUT/s1
for v in w20 w40; do timeout 100 $dv bench gpu-single --presets none --voice $OUT/$v/voice --precision both --clusters 16 --helpers 8 --json $OUT/single.jsonl 2>&1 | tail -8; done | tee $OUT/single.txt
rm -rf $OUT/s1/bin $OUT/s1/lib
