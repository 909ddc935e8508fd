#!/usr/bin/env bash
# The dv-serve load record (benchmarks/serve.md): start-up to ready, one
# stream, streams at capacity, and twice the capacity with oha, on loopback.
#
#   benchmarks/serve/load.sh [VOICE_DIR]
#
# VOICE_DIR: a voice package folder (default: a random 20x64x128 voice made
# by `cargo run -p dv-serve --example bench_voice`, which speaks through
# CMUDict). Needs dv-serve built (cargo build -p dv-serve --examples) and
# oha (cargo install oha).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$HOME/.cache/deepvoice-rs/target}/${PROFILE:-debug}"
work="${WORK:-/tmp/dv-serve-bench}"
port="${PORT:-18181}"
mkdir -p "$work/voices"
voice_dir="${1:-$work/voices/b20x64x128}"
if [ ! -f "$voice_dir/config.json" ]; then
    "$target/examples/bench_voice" "$voice_dir" 20x64x128
fi
voices="$(dirname "$voice_dir")"
voice="$(basename "$voice_dir")"
text="The quick brown fox jumps over the lazy dog, and then it runs far away into the quiet forest."
body="{\"model\":\"deepvoice\",\"input\":\"$text\",\"voice\":\"$voice\",\"seed\":1}"

server=""
start() { # start ARGS…: the server, waiting for /readyz; prints ms to ready
    local t0 t1
    t0=$(date +%s%N)
    "$target/dv-serve" --port "$port" --voices "$voices" --voice "$voice" "$@" >"$work/server.log" 2>&1 &
    server=$!
    until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do sleep 0.005; done
    t1=$(date +%s%N)
    echo "ready after $(( (t1 - t0) / 1000000 )) ms ($*)"
}
stop() { kill -TERM "$server"; wait "$server" || true; }
rss() { echo "resident memory: $(awk '/VmRSS|VmHWM/ {printf "%s %s kB  ", $1, $2}' "/proc/$server/status")"; }

echo "== $(date -u) on $(nproc) cores: $(lscpu | sed -n 's/^Model name: *//p')"
ls -l "$target/dv-serve" | awk '{print "binary: " $5 " bytes"}'
echo "ldd:"; ldd "$target/dv-serve" | sed 's/^/  /'
ldd "$target/dv-serve" | grep -E "torch|c10" && { echo "links libtorch!"; exit 1; }

for i in 1 2 3; do start; stop; done
start
rss
echo "== one stream"
python3 "$here/benchmarks/serve/streams.py" "http://127.0.0.1:$port" 1 30 "$text"
for c in 2 3; do
    echo "== $c concurrent streams (2 workers)"
    python3 "$here/benchmarks/serve/streams.py" "http://127.0.0.1:$port" "$c" 40 "$text"
done
rss
echo "== oha at capacity: 2 concurrent"
oha --no-tui -z 40s -c 2 -m POST -H "content-type: application/json" -d "$body" "http://127.0.0.1:$port/v1/audio/speech"
echo "== oha at 2x (workers + queue) = 12 concurrent"
oha --no-tui -z 40s -c 12 -m POST -H "content-type: application/json" -d "$body" "http://127.0.0.1:$port/v1/audio/speech"
rss
curl -s "http://127.0.0.1:$port/metrics" | grep -E "^dv_serve_(requests_total|renders_cancelled|audio_seconds|queue|active)" || true
stop
echo "== workers 3 (oversubscribed), queue 0: 3 streams, then oha at 6"
start --workers 3 --queue 0
python3 "$here/benchmarks/serve/streams.py" "http://127.0.0.1:$port" 3 40 "$text"
oha --no-tui -z 30s -c 6 -m POST -H "content-type: application/json" -d "$body" "http://127.0.0.1:$port/v1/audio/speech"
rss
stop
echo "== workers 3, queue 0: oha paced at 1.5 requests/s from 6 clients (2x the ~0.75/s it serves)"
start --workers 3 --queue 0
oha --no-tui -z 40s -c 6 -q 1.5 -m POST -H "content-type: application/json" -d "$body" "http://127.0.0.1:$port/v1/audio/speech"
rss
stop
echo "== int16 weights: 2 and 3 streams (workers 3), 4 and 5 streams (workers 5)"
start --int16 --workers 3
python3 "$here/benchmarks/serve/streams.py" "http://127.0.0.1:$port" 2 30 "$text"
python3 "$here/benchmarks/serve/streams.py" "http://127.0.0.1:$port" 3 30 "$text"
stop
start --int16 --workers 5 --queue 0
python3 "$here/benchmarks/serve/streams.py" "http://127.0.0.1:$port" 4 30 "$text"
python3 "$here/benchmarks/serve/streams.py" "http://127.0.0.1:$port" 5 30 "$text"
stop
