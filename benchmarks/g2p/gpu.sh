#!/usr/bin/env bash
# G2P training on the GPU machine (issue 5): the compact model (shipped) and the paper-size
# model, each for a fixed wall time, then PER/WER with beam 5 on the held-out test words.
#   benchmarks/g2p/gpu.sh .carry/dv.xz .carry/cmudict.dict $OUT
# COMPACT_S / PAPER_S: training seconds (0 skips the paper model); COMPACT_EVAL / PAPER_EVAL: test
# words decoded; EVAL_S: seconds allowed per evaluation. The compact checkpoint comes back split
# into 15 MB parts (ckparts/): `cat parts* > step.safetensors`.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
out=$3
mkdir -p "$out/bin" "$out/lib"
xz -dc "$1" > "$out/bin/dv" && chmod +x "$out/bin/dv"
export DV_CMUDICT=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
ln -sf "$site/nvidia/nccl/lib/libnccl.so.2" "$out/lib/libnccl.so"
export LD_LIBRARY_PATH="$out/lib:$site/torch/lib:$site/nvidia/cu13/lib:$site/nvidia/nccl/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,memory.total --format=csv | tee "$out/gpu.csv"
train() {  # train NAME PRESET SECONDS
    local d=$out/$1; mkdir -p "$d"
    sed -e "s/^preset = \"compact\"/preset = \"$2\"/" -e 's/^device = "cpu"/device = "cuda"/' \
        -e "s#runs/g2p-compact#$d#g" -e 's/^every = 1000$/every = 500/' "$here/trainers/train/configs/g2p-compact.toml" > "$d/run.toml"
    # the schedule's `every = 1000` (anneal) is the first match; keep it, checkpoint every 500
    sed -i '0,/^every = 500$/s//every = 1000/' "$d/run.toml"
    timeout "$3" "$out/bin/dv" train --config "$d/run.toml" > "$d/stdout.txt" 2> "$d/stderr.txt"
    echo "$1: rc=$? $(grep -c . "$d/metrics.jsonl") log lines"; tail -2 "$d/stderr.txt"
}
train compact compact "${COMPACT_S:-280}"
[ "${PAPER_S:-150}" = 0 ] || train paper paper "${PAPER_S:-150}"
for m in compact paper; do
    last=$(ls "$out/$m/checkpoints"/step-*.safetensors 2>/dev/null | tail -1)
    [ -n "$last" ] || continue
    lim=$([ $m = paper ] && echo "${PAPER_EVAL:-500}" || echo "${COMPACT_EVAL:-1000000}")
    timeout "${EVAL_S:-150}" "$out/bin/dv" evaluate --checkpoint "$last" --limit "$lim" 2>&1 | tail -2 | tee "$out/$m/eval.txt"
done
rm -rf "$out/bin" "$out/lib"
last=$(ls "$out/compact/checkpoints"/step-*.safetensors | tail -1)
mkdir -p "$out/ckparts" && split -b 15M "$last" "$out/ckparts/$(basename "$last")."
find "$out" -path "$out/ckparts" -prune -o -name '*.safetensors' -print -delete > /dev/null
cd "$out" && tar czf all.tgz --exclude=all.tgz --exclude=ckparts .
