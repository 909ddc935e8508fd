#!/usr/bin/env bash
# dv train on the GPU machine: NCCL conformance, 1-vs-2-GPU equality, scaling of the paper-size
# segmentation model. Run from the repo root on the device with the stripped binaries in .carry/:
#   benchmarks/train/gpu.sh .carry/dv .carry/conformance $OUT
# PROFILE=true logs ms per step phase (data, fwd+bwd, allreduce, optim; the device is synchronised
# at each boundary); SKIP_EQ=1 skips the 1-vs-2 equality runs. Everything under $OUT is also packed
# into $OUT/all.tgz (the device tool brings back a limited number of files).
set -uo pipefail
dv=$1 conf=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
nccl=$site/nvidia/nccl/lib
mkdir -p "$out/lib" && ln -sf "$nccl/libnccl.so.2" "$out/lib/libnccl.so"
export LD_LIBRARY_PATH="$out/lib:$site/torch/lib:$site/nvidia/cu13/lib:$nccl:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpus.csv"

echo "== NCCL conformance (2 GPUs), all-reduce latency, and dead-rank watchdog"
NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$out/nccl.%h.%p.log" timeout 120 "$conf" 2 2>&1 | tee "$out/conformance.txt"
grep -h "via\|Channel 00" "$out"/nccl.*.log | head -20

cfg() {  # cfg NAME SIZES CLASSES LABELS BATCH STEPS
    local d=$out/$1; mkdir -p "$d"
    sed -e "s|@SIZES@|$2|" -e "s|@CLASSES@|$3|" -e "s|@LABELS@|$4|" -e "s|@BATCH@|$5|" -e "s|@STEPS@|$6|" \
        -e "s|@DIR@|$d|g" -e "s|@PROFILE@|${PROFILE:-false}|" "$here/segmentation.toml.in" > "$d/run.toml"
    echo "$d/run.toml"
}
run() {  # run NAME GPUS CONFIG
    local d=$out/$1
    nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits -lms 500 > "$d/mem.csv" &
    local smi=$!
    local t0=$(date +%s.%N)
    timeout 400 "$dv" train --config "$3" --gpus "$2" > "$d/stdout.txt" 2> "$d/stderr.txt"
    local rc=$?
    local t1=$(date +%s.%N)
    kill $smi
    echo "$1: rc=$rc wall=$(python3 -c "print(round($t1-$t0,1))") s, peak MiB per GPU: $(sort -t, -k2 -n "$d/mem.csv" | awk -F', ' '{m[$1]=($2>m[$1]?$2:m[$1])} END{for(g in m) printf "gpu%s=%s ", g, m[g]}')"
    tail -3 "$d/stderr.txt"
}

if [ -z "${SKIP_EQ:-}" ]; then
echo "== 1 vs 2 GPUs, same global batch, 100 steps"
small='sizes = { mfcc = 20, conv_channels = 8, kernel_freq = 9, kernel_time = 5, gru = 64, gru_layers = 2, classes = 17, dropout = 0.05 }'
run eq1 1 "$(cfg eq1 "$small" 16 '4, 12' 16 100)"
run eq2 2 "$(cfg eq2 "$small" 16 '4, 12' 16 100)"
python3 "$here/compare.py" "$out/eq1/ck/step-0000000100.safetensors" "$out/eq2/ck/step-0000000100.safetensors" | tee "$out/equality.json"
fi

echo "== scaling, paper-size segmentation (Deep Voice §3.2), ~3.9 s utterances"
paper='preset = "paper"'
run s1_b32 1 "$(cfg s1_b32 "$paper" 1600 '40, 100' 32 60)"
run s2_b64 2 "$(cfg s2_b64 "$paper" 1600 '40, 100' 64 60)"
run s2_b32 2 "$(cfg s2_b32 "$paper" 1600 '40, 100' 32 60)"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def rate(name):
    rows = [json.loads(l) for l in open(f"{out}/{name}/metrics.jsonl")]
    rows = [r for r in rows if r["step"] > 20]   # skip warm-up windows
    sps = sum(r["samples_per_s"] for r in rows) / len(rows)
    return sps
r1, r2w, r2s = rate("s1_b32"), rate("s2_b64"), rate("s2_b32")
res = {"samples_per_s": {"1gpu_b32": r1, "2gpu_b64": r2w, "2gpu_b32": r2s},
       "ms_per_step": {"1gpu_b32": 32000 / r1, "2gpu_b64": 64000 / r2w, "2gpu_b32": 32000 / r2s},
       "weak_scaling_efficiency": r2w / (2 * r1), "strong_scaling_speedup": r2s / r1}
print(json.dumps(res, indent=1))
json.dump(res, open(f"{out}/scaling.json", "w"), indent=1)
PY
(cd "$out" && find . -name '*.safetensors' -delete; rm -rf lib; tar czf all.tgz --exclude=all.tgz .)
