#!/usr/bin/env bash
# Voiced-only temperature on the GPU (the default sampling, dv_speak::DEFAULT_SAMPLING): the GPU
# conformance suite (every kernel family against the CPU reference, draws replayed at each frame's
# temperature), the multi-stream kernels with the shipped voice's weights, `dv-serve --device cuda`
# speaking (its start-up parity check includes the voiced draws), and the renders that
# benchmarks/voice/listen_table.py scores on the dev VM.
# Dev VM first (CARGO_TARGET_DIR as for the builds; VOICE: a voice package to render, METADATA its
# corpus's metadata.tsv for the held-out sentences):
#   VOICE=... METADATA=... bash benchmarks/voice/gpu_sampling.sh carry
# Then on nvidia-h200, carry .carry:
#   bash benchmarks/voice/gpu_sampling.sh $OUT    # PARTS="conformance streams serve render-j render-slt" (default: all)
# (render-j: J_SETS, default novel,heldout)
# The renders come back as OUT/wavs-SYSTEM-SET.tar (unpack under wavs/ for listen_table.py's wavs: systems).
set -uo pipefail
if [ "${1:-}" = carry ]; then
    set -e
    here=$(cd "$(dirname "$0")/../.." && pwd); c=$here/.carry
    target=${CARGO_TARGET_DIR:-$HOME/.cache/deepvoice-rs/target}
    (cd "$here" && cargo build -p dv -p dv-serve && cargo build -p dv-gpu --example gpu_bench)
    it=$(cd "$here" && cargo test -p dv-gpu --no-run --message-format=json 2>/dev/null \
        | python3 -c 'import json, sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "it" and m.get("executable"): print(m["executable"])')
    mkdir -p "$c/voices"
    for b in dv dv-serve; do strip -o "$c/$b" "$target/debug/$b" && xz -T2 -6 -f "$c/$b"; done
    strip -o "$c/gpu_bench" "$target/debug/examples/gpu_bench" && xz -T2 -6 -f "$c/gpu_bench"
    strip -o "$c/gpu_it" "$it" && xz -T2 -6 -f "$c/gpu_it"
    rm -rf "$c/voices/j20k" && cp -r "${VOICE:?a voice package}" "$c/voices/j20k"
    cp "${METADATA:?the corpus metadata.tsv}" "$c/hibari60-metadata.tsv"
    du -sh "$c"/*
    exit 0
fi
parts=" ${PARTS:-conformance streams serve render-j render-slt} "
has() { [[ $parts == *" $1 "* ]]; }
out=${1:?OUT}
here=$(cd "$(dirname "$0")/../.." && pwd)
c=$here/.carry
. "$here/benchmarks/device_env.sh"
device_env "$c/dv.xz" "$out"
carried_bin "$c/dv-serve.xz" "$out" dv-serve
carried_bin "$c/gpu_it.xz" "$out" gpu_it
carried_bin "$c/gpu_bench.xz" "$out" gpu_bench
export DV_HOME=$out/home PATH=$out/bin:$PATH
mkdir -p "$DV_HOME" "$out/logs"
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$out/logs/gpu.csv"
t0=$(date +%s)
# 1. The conformance suite on the GPU (random voices of every preset).
if has conformance; then
timeout 240 "$out/bin/gpu_it" conformance --test-threads 1 --nocapture >"$out/logs/conformance.log" 2>&1
echo "conformance rc=$? ($(( $(date +%s) - t0 )) s)"; tail -5 "$out/logs/conformance.log"
fi
# 2. Every multi-stream kernel with the shipped voice's weights (parity, then one timing).
# 2. Every multi-stream kernel with the shipped voice's weights (parity, voiced draws replayed),
#    then the fastest kernel timed with direct and with voiced-only temperature sampling.
if has streams; then
timeout 150 "$out/bin/gpu_bench" gpu-streams --presets none --voice "$here/inference/voices/slt" \
    --kernels tiles,tiles-wg,cols,panels --streams 1024 --repeats 1 >"$out/logs/streams.log" 2>&1
echo "gpu-streams rc=$? ($(( $(date +%s) - t0 )) s)"; grep parity "$out/logs/streams.log"
for sampling in direct voiced-temperature:0.6; do
    timeout 200 "$out/bin/gpu_bench" gpu-streams --presets none --voice "$here/inference/voices/slt" --kernels fastest \
        --streams 2048,4224,5280 --sampling $sampling --json "$out/logs/streams.jsonl" >"$out/logs/streams-$sampling.log" 2>&1
    echo "gpu-streams $sampling rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "parity|^\| [0-9]|largest|sampling " "$out/logs/streams-$sampling.log"
done
fi
# 3. dv-serve on the GPU with the default sampling: ready, then three answers.
if has serve; then
dv-serve --device cuda --port 18333 --voices "$here/inference/voices" >"$out/logs/serve.log" 2>&1 &
sp=$!
for _ in $(seq 1 240); do curl -sf localhost:18333/readyz >/dev/null && break; sleep 0.5; done
mkdir -p "$out/serve"
k=0
while IFS= read -r line; do
    k=$((k + 1))
    curl -sf localhost:18333/v1/audio/speech -H 'content-type: application/json' \
        -d "{\"model\":\"tts-1\",\"voice\":\"slt\",\"input\":\"$line\",\"response_format\":\"wav\"}" -o "$out/serve/s$k.wav"
    echo "serve answer $k rc=$? $(stat -c %s "$out/serve/s$k.wav" 2>/dev/null) B"
done <<'TXT'
The kettle whistled twice before anyone thought to take it off the stove.
Seven purple umbrellas leaned against the library wall all afternoon.
Please check the third shelf for the missing invoice from March.
TXT
kill -TERM $sp; wait $sp; tail -4 "$out/logs/serve.log"
fi
# 4. Renders on the GPU (dv synth --device cuda, the default sampling, seed 0).
if has render-j || has render-slt; then
cd "$out"
if has render-j; then
python3 "$here/benchmarks/voice/listen_table.py" --render-only --jobs 8 --dv "$out/bin/dv" --out wavs \
    --sets "${J_SETS:-novel,heldout}" --heldout "$c/hibari60-metadata.tsv" --heldout-n 40 \
    "--system=j20k-cuda=dv:$c/voices/j20k:--device cuda" >"$out/logs/render-j.log" 2>&1
echo "render j rc=$? ($(( $(date +%s) - t0 )) s)"
fi
if has render-slt; then
python3 "$here/benchmarks/voice/listen_table.py" --render-only --jobs 8 --dv "$out/bin/dv" --out wavs --sets novel \
    "--system=slt-cuda=dv:$here/inference/voices/slt:--device cuda" >"$out/logs/render-slt.log" 2>&1
echo "render slt rc=$? ($(( $(date +%s) - t0 )) s)"
fi
for d in "$out"/wavs/*/*/; do
    set_name=$(basename "$d"); system=$(basename "$(dirname "$d")")
    tar -C "$out/wavs" -cf "$out/wavs-$system-$set_name.tar" "$system/$set_name"
done
ls -la "$out"/wavs-*.tar; rm -rf "$out/wavs"
fi
rm -rf "$out/bin" "$out/lib" "$out/home"
