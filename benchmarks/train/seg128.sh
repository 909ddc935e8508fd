#!/usr/bin/env bash
# Issue 6: ms per iteration of the paper-size segmentation model (§3.2: 2 convolutions, 3 × 512
# bidirectional GRUs, 1601 classes) at the paper's batch of 128, on one GPU and on two
# (synthetic utterances of 40–100 labels × 3–8 frames, i.e. 1.2–8 s at 10 ms frames).
#   benchmarks/train/seg128.sh .carry/dv.xz $OUT
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$2
mkdir -p "$out/bin" "$out/lib"
xz -dc "$1" > "$out/bin/dv" && chmod +x "$out/bin/dv"
site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
nccl=$site/nvidia/nccl/lib
ln -sf "$nccl/libnccl.so.2" "$out/lib/libnccl.so"
export LD_LIBRARY_PATH="$out/lib:$site/torch/lib:$site/nvidia/cu13/lib:$nccl:${LD_LIBRARY_PATH:-}"
for g in 1 2; do
    d=$out/seg_b128_g$g; mkdir -p "$d"
    sed -e 's|@SIZES@|preset = "paper"|' -e 's|@CLASSES@|1600|' -e 's|@LABELS@|40, 100|' -e 's|@BATCH@|128|' \
        -e 's|@STEPS@|40|' -e "s|@DIR@|$d|g" -e "s|@PROFILE@|${PROFILE:-false}|" "$here/segmentation.toml.in" > "$d/run.toml"
    if [ $g = 1 ]; then timeout 200 "$out/bin/dv" train --config "$d/run.toml" > "$d/stdout.txt" 2> "$d/stderr.txt"
    else timeout 200 "$out/bin/dv" train --config "$d/run.toml" --gpus 2 > "$d/stdout.txt" 2> "$d/stderr.txt"; fi
    echo "seg_b128_g$g rc=$?"; tail -2 "$d/stderr.txt"
done
python3 - "$out" <<'PY' | tee "$out/seg128.txt"
import json, sys
for g in (1, 2):
    rows = [json.loads(l) for l in open(f"{sys.argv[1]}/seg_b128_g{g}/metrics.jsonl")]
    rows = [r for r in rows if r["step"] > 10]
    sps = sum(r["samples_per_s"] for r in rows) / len(rows)
    print(f"paper segmentation, batch 128, {g} GPU(s): {128000 / sps:.0f} ms/iteration ({sps:.1f} utterances/s, {sum(r['audio_s_per_s'] for r in rows) / len(rows):.0f} audio-s/s)")
PY
rm -rf "$out/bin" "$out/lib"
