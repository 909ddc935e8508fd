#!/usr/bin/env bash
# dv align with the CTC Viterbi on the GPU against the CPU reference (issue 6): the model's forward
# pass on the GPU in both runs, then Viterbi in dv-align's CUDA kernel (one launch per batch) or on
# the CPU; the alignments must be identical. On the device, from the repo root:
#   benchmarks/align/gpu_viterbi.sh .carry/dv.xz .carry/features .carry/seg.safetensors $OUT
set -uo pipefail
dvxz=$1 features=$2 ckpt=$3 out=$4
source "$(dirname "$0")/../device_env.sh"
device_env "$dvxz" "$out"
for v in cuda cpu; do
    for batch in 16 64; do
        "$dv" align --features "$features" --checkpoint "$ckpt" --out "$out/$v-$batch" --device cuda \
            --viterbi $v --batch $batch --pper-beam 0 > "$out/$v-$batch.txt" 2>&1
        echo "viterbi $v batch $batch: rc=$? $(grep -E 'viterbi  |aligned  |boundaries' "$out/$v-$batch.txt" | tr -s ' ' | tr '\n' ';')"
    done
done
for b in 16 64; do
    cmp -s "$out/cuda-$b/alignments.parquet" "$out/cpu-$b/alignments.parquet" && echo "batch $b: alignments.parquet byte-identical" \
        || echo "batch $b: alignments.parquet files differ"
done
python3 - "$out" <<'PY' || true
import sys, pyarrow.parquet as pq
out = sys.argv[1]
for b in (16, 64):
    g = pq.read_table(f"{out}/cuda-{b}/alignments.parquet").to_pydict()
    c = pq.read_table(f"{out}/cpu-{b}/alignments.parquet").to_pydict()
    same = all(g[k] == c[k] for k in ("id", "phones", "starts", "ends", "confidence"))
    print(f"batch {b}: {len(g['id'])} utterances, GPU alignments identical to the CPU's: {same}")
PY
rm -rf "$out/bin" "$out/lib" "$out"/*/textgrid
