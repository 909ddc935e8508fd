#!/usr/bin/env bash
# WaveNet training speed and a first training run on the GPU machine (issue 7).
# Run from the repo root on the device, with the xz-compressed stripped dv in .carry/ and a
# featurize output at $FEATURES:
#   FEATURES=.carry/features benchmarks/wavenet/gpu.sh .carry/dv.xz $OUT
# TIMING="L R S BF16 BATCH GPUS ..." picks the timing runs (groups of 6), FUSED=false times
# libtorch autograd instead of the fused step (`[model.sizes] fused`), PREFETCH (2) batches built
# ahead on the data thread (`[train] prefetch`; 0 builds each in the step), TIMING_STEPS (40) steps each,
# the mean over the windows after TIMING_SKIP (10); TRAIN_S seconds of
# training afterwards with TRAIN_SIZE="L R S BF16" (0 skips). Everything under $OUT is packed
# into $OUT/all.tgz.
set -uo pipefail
dvxz=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/bin" "$out/lib"
xz -dc "$dvxz" > "$out/bin/dv" && chmod +x "$out/bin/dv"
dv=$out/bin/dv
site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
nccl=$site/nvidia/nccl/lib
ln -sf "$nccl/libnccl.so.2" "$out/lib/libnccl.so"
export LD_LIBRARY_PATH="$out/lib:$site/torch/lib:$site/nvidia/cu13/lib:$nccl:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpus.csv"
features=$(cd "$FEATURES" && pwd)

cfg() {  # cfg NAME L R S BF16 BATCH STEPS LOG VAL CKPT PROFILE
    local d=$out/$1; mkdir -p "$d"
    sed -e "s|@L@|$2|" -e "s|@R@|$3|" -e "s|@S@|$4|" -e "s|@BF16@|$5|" -e "s|@BATCH@|$6|" -e "s|@STEPS@|$7|" \
        -e "s|@LOG@|$8|" -e "s|@VAL@|$9|" -e "s|@CKPT@|${10}|" -e "s|@PROFILE@|${11}|" \
        -e "s|@FUSED@|${FUSED:-true}|" -e "s|@PREFETCH@|${PREFETCH:-2}|" -e "s|@DIR@|$d|g" -e "s|@FEATURES@|$features|" "$here/wavenet.toml.in" > "$d/run.toml"
    echo "$d/run.toml"
}
run() {  # run NAME GPUS CONFIG TIMEOUT
    local d=$out/$1
    nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits -lms 500 > "$d/mem.csv" &
    local smi=$!
    local t0=$(date +%s.%N)
    if [ "$2" = 1 ]; then
        timeout "$4" "$dv" train --config "$3" > "$d/stdout.txt" 2> "$d/stderr.txt"
    else
        timeout "$4" "$dv" train --config "$3" --gpus "$2" > "$d/stdout.txt" 2> "$d/stderr.txt"
    fi
    local rc=$?
    local t1=$(date +%s.%N)
    kill $smi
    echo "$1: rc=$rc wall=$(python3 -c "print(round($t1-$t0,1))") s, peak MiB per GPU: $(sort -t, -k2 -n "$d/mem.csv" | awk -F', ' '{m[$1]=($2>m[$1]?$2:m[$1])} END{for(g in m) printf "gpu%s=%s ", g, m[g]}')" | tee -a "$out/summary.txt"
    tail -4 "$d/stderr.txt"
}

set -- ${TIMING:-40 64 256 false 8 1 40 64 256 true 8 1}
while [ $# -ge 6 ]; do
    name="t_${1}x${2}x${3}_bf16-${4}_b${5}_g${6}_fused-${FUSED:-true}"
    run "$name" "$6" "$(cfg "$name" "$1" "$2" "$3" "$4" "$5" "${TIMING_STEPS:-40}" 5 0 100000 "${PROFILE:-false}")" 300
    shift 6
done
if [ -n "${TF32_TIMING:-}" ]; then  # float32 matmuls on TF32 tensor cores (PyTorch's override)
    name="t_40x64x256_tf32_b8_g1"
    TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 run "$name" 1 "$(cfg "$name" 40 64 256 false 8 40 5 0 100000 "${PROFILE:-false}")" 300
fi
python3 - "$out" <<'PY' | tee -a "$out/summary.txt"
import json, sys, glob, os
out = sys.argv[1]
for d in sorted(glob.glob(f"{out}/t_*")):
    try:
        rows = [json.loads(l) for l in open(f"{d}/metrics.jsonl")]
    except OSError:
        print(os.path.basename(d), "no metrics"); continue
    rows = [r for r in rows if r["step"] > int(os.environ.get("TIMING_SKIP", 10))]   # skip warm-up windows
    if not rows:
        print(os.path.basename(d), "too few steps"); continue
    batch = int(os.path.basename(d).split("_b")[-1].split("_")[0])  # the last "_b" is "_bN"
    sps = sum(r["samples_per_s"] for r in rows) / len(rows)
    print(f"{os.path.basename(d)}: {1000 * batch / sps:.1f} ms/iteration ({sps:.1f} chunks/s), loss {rows[-1]['loss']:.3f}")
PY

if [ "${TRAIN_S:-0}" != 0 ]; then
    set -- ${TRAIN_SIZE:-40 64 256 true}
    name=train
    run "$name" "${TRAIN_GPUS:-1}" "$(cfg "$name" "$1" "$2" "$3" "$4" "${TRAIN_BATCH:-8}" 1000000 20 250 250 false)" "$TRAIN_S"
    "$dv" plot "$out/train/metrics.jsonl" --out "$out/train/loss.png" || true
    last=$(ls "$out/train/ck"/step-*.safetensors | tail -1)
    "$dv" export --checkpoint "$last" --out "$out/voice" 2>&1 | tail -2
fi
rm -rf "$out/bin" "$out/lib"
find "$out" -name '*.safetensors' -size +15M -delete
cd "$out" && tar czf all.tgz --exclude=all.tgz .
