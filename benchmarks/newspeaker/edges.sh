#!/usr/bin/env bash
# Issue 41: where the aligner puts the edges of speech, against festival's own segment times.
# Trains the CPU recipe's segmentation model on the embedded corpus (festival's slt, 287 training
# utterances, about 18 minutes, with .lab files), aligns it as the recipe does, then aligns the
# same checkpoint again with each `dv align` given, and scores every alignment with boundary.py
# (internal boundaries, speech start and end, against the labs). On the dev VM: about 40 minutes.
#   benchmarks/newspeaker/edges.sh OUT [DV...]
# OUT: a work folder; DV: further `dv` binaries whose `align` to compare (e.g. one built before a
# change), each written to OUT/aligned-<n>. DV (env): the dv that runs the recipe (default: dv).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift
dv=${DV:-dv}
export DV_HOME="$out/home"
corpus="$DV_HOME/corpora/cmu_us_slt_fortunes_300"
sed -e "s|^corpus = .*|corpus = \"$corpus\"|" -e "s|^out = .*|out = \"$out/run\"|" \
    -e "s|\"\.\./\.\./|\"$here/|g" "$here/benchmarks/newspeaker/cpu-finetune.toml" > "$out/recipe.toml"
# The embedded corpus, rendered by festival on first use, at the rate the tiny recipe uses.
python3 - "$out/recipe.toml" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace("format = \"table\"\n", "make_default = 300\n", 1) + "\n[featurize]\nsample_rate = 16384\n"
open(p, "w").write(s)
PY
"$dv" recipe run "$out/recipe.toml" --stop-stage align
ck=$(ls "$out"/run/runs/train-segmentation/*/checkpoints/step-*.safetensors | sort | tail -1)
echo "== the recipe's align ($dv)"
python3 "$here/benchmarks/newspeaker/boundary.py" "$out/run/aligned/alignments.parquet" "$corpus/lab" | grep -E "^  (internal|speech)" | head -3
n=0
for other in "$@"; do
    n=$((n + 1))
    "$other" align --features "$out/run/features-text" --checkpoint "$ck" --out "$out/aligned-$n" --batch 16 > "$out/align-$n.log" 2>&1
    echo "== $other align"
    python3 "$here/benchmarks/newspeaker/boundary.py" "$out/aligned-$n/alignments.parquet" "$corpus/lab" | grep -E "^  (internal|speech)" | head -3
done
