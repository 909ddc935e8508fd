#!/usr/bin/env bash
# Time to first audio for one stream, --first-block 256 (the default) against 0 (whole blocks; FIRST_BLOCKS=),
# on the CPU paths of dv-serve (cpu: a render per request; cpu-slots: the slot scheduler that
# --device cuda runs), the shipped voice, ROUNDS interleaved rounds of SECONDS each
# (benchmarks/serve/streams.py: one client posting back to back, streamed WAV).
#   cargo build -p dv-serve && benchmarks/serve/first_audio.sh
# On the GPU machine: DEVICES=cuda benchmarks/serve/first_audio.sh (dv-serve on PATH or DV_SERVE=).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
serve=${DV_SERVE:-${CARGO_TARGET_DIR:-$HOME/.cache/deepvoice-rs/target}/debug/dv-serve}
port=${PORT:-18191}
text=${TEXT:-The quick brown fox jumps over the lazy dog, and then it runs far away into the quiet forest.}
home=$(mktemp -d)
sp=
trap '[ -n "$sp" ] && kill -TERM "$sp" 2>/dev/null; rm -rf "$home"' EXIT
if curl -sf "localhost:$port/readyz" >/dev/null; then echo "port $port is taken (PORT=)"; exit 1; fi
echo "== $(date -u +%FT%TZ) $(nproc) cores: $(lscpu | sed -n 's/^Model name: *//p'); $(cd "$here" && git rev-parse --short HEAD)"
for round in $(seq "${ROUNDS:-2}"); do
    for device in ${DEVICES:-cpu cpu-slots}; do
        for fb in ${FIRST_BLOCKS:-256 0}; do
            # shellcheck disable=SC2086 # SERVE_ARGS: more flags, split on spaces
            DV_HOME=$home "$serve" --port "$port" --voices "$here/inference/voices" --device "$device" \
                --first-block "$fb" ${SERVE_ARGS:-} >"$home/serve.log" 2>&1 &
            sp=$!
            until curl -sf "localhost:$port/readyz" >/dev/null; do
                kill -0 "$sp" 2>/dev/null || { cat "$home/serve.log"; exit 1; }
                sleep 0.05
            done
            r=$(python3 "$here/benchmarks/serve/streams.py" "http://127.0.0.1:$port" 1 "${SECONDS_EACH:-15}" "$text")
            short=$(curl -s "localhost:$port/metrics" | sed -n 's/^dv_serve_slot_short_launches_total //p')
            python3 -c 'import json, sys
d, (r, dev, fb, short) = json.loads(sys.argv[1]), sys.argv[2:]
print("round %s %-9s --first-block %3s: %d requests, first audio p50 %.1f ms p99 %.1f ms, underruns %d (worst %.0f ms), short launches %s"
      % (r, dev, fb, d["requests"], d["ttfa_p50_ms"], d["ttfa_p99_ms"], d["underruns"], d["worst_lag_ms"], short or "-"))' \
                "$r" "$round" "$device" "$fb" "$short"
            kill -TERM "$sp"; wait "$sp" || true; sp=
        done
    done
done
