#!/usr/bin/env bash
# Issue 41: duration/F0 model variants trained on the dev VM's CPU, each put beside one trained
# WaveNet, so that listen_table.py can judge what the duration/F0 model alone changes.
#
# Needs a recipe run through its align stage (the duration stage trains in a few minutes on a
# CPU; the segmentation model and the aligner are the slow part: about 40 minutes on 2 cores with
# the CPU-sized segmentation model, cpu-finetune.toml):
#   DV_HOME=$W/home dv recipe run benchmarks/newspeaker/cpu-finetune.toml --stop-stage align
# then
#   benchmarks/newspeaker/cpu_duration.sh RECIPE VOICE OUTDIR [VARIANT...]
# RECIPE: that recipe file; VOICE: a voice package whose WaveNet the variants share (its own
# duration/F0 model is replaced); VARIANT: name=key=value,key=value over the duration run config,
# e.g. "b-stress=data.stress=true" "c-bidir=data.stress=true,model.sizes.bidirectional=true,init=none"
# (a value of none deletes the key: a bidirectional model cannot start from a unidirectional one).
# BASE=run.toml: start from that duration run config instead of RECIPE's (RECIPE is then not read).
# Writes OUTDIR/NAME/{run.toml,train.log} and OUTDIR/voices/NAME/ (the voice package, with the
# repository's G2P model).
set -euo pipefail
recipe=$1 voice=$2 out=$3
shift 3
dv=${DV:-dv}
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out/voices"
if [ -n "${BASE:-}" ]; then
    cp "$BASE" "$out/base.toml"
else
    "$dv" recipe train-config --stage train-duration --out "$out/base.toml" "$recipe"
fi
for variant in "$@"; do
    name=${variant%%=*}
    sets=${variant#*=}
    mkdir -p "$out/$name"
    python3 - "$out/base.toml" "$out/$name/run.toml" "$out/$name" "$sets" <<'EOF'
import sys, tomllib
base, dest, rundir, sets = sys.argv[1:]
cfg = tomllib.load(open(base, "rb"))
cfg["checkpoint"]["url"] = f"{rundir}/checkpoints"
cfg.setdefault("tracking", {})["jsonl"] = f"{rundir}/metrics.jsonl"
cfg["tracking"].pop("mlflow_uri", None)
for kv in filter(None, sets.split(",")):
    key, value = kv.split("=", 1)
    node = cfg
    *path, last = key.split(".")
    for p in path:
        node = node.setdefault(p, {})
    if value == "none":
        node.pop(last, None)
        continue
    node[last] = {"true": True, "false": False}.get(value, value)
    for conv in (int, float):
        try:
            node[last] = conv(value)
            break
        except ValueError:
            pass

def dump(d, prefix=""):
    lines, tables = [], []
    for k, v in d.items():
        if isinstance(v, dict):
            tables.append((k, v))
        else:
            lines.append(f"{k} = {val(v)}")
    out = "\n".join(lines) + ("\n" if lines else "")
    for k, v in tables:
        name = f"{prefix}{k}"
        out += f"\n[{name}]\n" + dump(v, name + ".")
    return out

def val(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(val(x) for x in v) + "]"
    return repr(v)

open(dest, "w").write(dump(cfg))
EOF
    t0=$SECONDS
    "$dv" train --config "$out/$name/run.toml" > "$out/$name/train.log" 2>&1
    last=$(ls "$out/$name/checkpoints"/step-*.safetensors | sort | tail -1)
    "$dv" export --voice "$voice" --duration "$last" --g2p "$here/trainers/train/models/g2p-compact.safetensors" \
        --out "$out/voices/$name" > "$out/$name/export.log"
    echo "$name: trained in $((SECONDS - t0)) s; $(grep -o 'val [0-9.]*' "$out/$name/train.log" | tr '\n' ' ')"
done
