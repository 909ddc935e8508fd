#!/usr/bin/env bash
# dv-serve on the GPU (issue 29): concurrent real-time streams through HTTP with
# `--device cuda` (requests sharing the multi-stream kernel's slots) beside the kernel-only
# figure of `gpu_bench gpu-streams` (dv-gpu's GPU bench) for the same voice, measured in the same
# call; time to first audio p50/p99 at each concurrency. The shipped voice (inference/voices/slt,
# 20x64x128).
#
# On the dev VM, once dv-serve and the GPU bench are built (cargo build -p dv-serve && cargo build
# -p dv-gpu --example gpu_bench), pack what the device needs:
#   benchmarks/serve/gpu.sh carry          # .carry/dv-serve.xz, .carry/gpu_bench.xz, .carry/oha.xz,
#                                          # .carry/cmudict.dict
# On the device machine, from the repository root:
#   benchmarks/serve/gpu.sh $OUT
# Knobs: LEVELS (concurrencies, default "1 64 512 1024 2048 3072 4096"), DURATION (s per level,
# default 25), RAMP (s over which the clients join, gpu_streams.py; default 1), KERNEL_RT (skip the kernel bench, taking this figure from an earlier one), SLOTS (default 4096), SLOT_BLOCK (samples per launch, dv-serve's --slot-block,
# default its own 1638 = 0.1 s: larger hides more per-launch host work, each request's first audio
# waits about two launches), KERNEL_STREAMS (gpu-streams counts, default
# "1024,2048,3072,4096,5120"), DEVICE (cuda; cpu-slots tries the script on a machine without a GPU,
# skipping the kernel bench), DV_SERVE_XZ (another dv-serve build, xz). Results: $OUT/summary.md, levels.jsonl (one line per concurrency,
# benchmarks/serve/gpu_streams.py), gpu-streams.jsonl/.txt, oha.json, metrics-*.txt, server.log.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
c=$here/.carry
target=${CARGO_TARGET_DIR:-$HOME/.cache/deepvoice-rs/target}/${PROFILE:-debug}

if [ "${1:-}" = carry ]; then
    set -e
    mkdir -p "$c"
    if ldd "$target/dv-serve" | grep -E "torch|c10"; then echo "dv-serve links libtorch" >&2; exit 1; fi
    strip -o "$c/dv-serve" "$target/dv-serve" && xz -T2 -6 -f "$c/dv-serve"
    strip -o "$c/gpu_bench" "$target/examples/gpu_bench" && xz -T2 -6 -f "$c/gpu_bench"   # benchmarks/gpu/carry.sh
    if command -v oha > /dev/null; then strip -o "$c/oha" "$(command -v oha)" && xz -T2 -6 -f "$c/oha"; fi
    du -sh "$c/dv-serve.xz" "$c/gpu_bench.xz" "$c/oha.xz" 2>&1
    exit 0
fi

out=${1:?usage: benchmarks/serve/gpu.sh OUT | carry}
device=${DEVICE:-cuda}
levels=(${LEVELS:-1 64 512 1024 2048 3072 4096})
duration=${DURATION:-25}
slots=${SLOTS:-4096}
block_args=()
[ -n "${SLOT_BLOCK:-}" ] && block_args=(--slot-block "$SLOT_BLOCK")
port=${PORT:-18282}
mkdir -p "$out/bin"
source "$here/benchmarks/device_env.sh"
if [ "$device" = cuda ]; then
    bench_env "$c/gpu_bench.xz" "$out"   # $gpu_bench, LD_LIBRARY_PATH (the torch wheel's CUDA 13 and NVRTC), gpus.csv
fi
xz -dc "${DV_SERVE_XZ:-$c/dv-serve.xz}" > "$out/bin/dv-serve" && chmod +x "$out/bin/dv-serve"
[ -f "$c/oha.xz" ] && xz -dc "$c/oha.xz" > "$out/bin/oha" && chmod +x "$out/bin/oha"
# The voice carries its lexicon (dv-serve needs no CMUDict beside it).
url=http://127.0.0.1:$port
text="The quick brown fox jumps over the lazy dog, and then it runs far away into the quiet forest. It stops by a stream, drinks, and listens to the birds in the tall trees."
stamp() { echo "[$(date +%T)] $*" | tee -a "$out/phases.txt"; }

{
    echo "$(date -u) on $(nproc) cores: $(lscpu | sed -n 's/^Model name: *//p')"
    ls -l "$out/bin/dv-serve" | awk '{print "dv-serve (stripped): " $5 " bytes"}'
    ldd "$out/bin/dv-serve"
} > "$out/machine.txt"
if ldd "$out/bin/dv-serve" | grep -E "torch|c10"; then stamp "dv-serve links libtorch"; exit 1; fi

# 1. The kernel alone: parity, then every slot live for 2048-sample launches.
kernel_rt=${KERNEL_RT:-0}
if [ "$device" = cuda ] && [ -z "${KERNEL_RT:-}" ]; then
    stamp "gpu_bench gpu-streams"
    "$gpu_bench" gpu-streams --presets none --voice "$here/inference/voices/slt" --precision bf16 \
        --streams "${KERNEL_STREAMS:-1024,2048,3072,4096,5120}" --json "$out/gpu-streams.jsonl" \
        > "$out/gpu-streams.txt" 2>&1
    tail -12 "$out/gpu-streams.txt"
    kernel_rt=$(python3 -c '
import json, sys
best = 0
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("bench") == "gpu-streams" and r["real_time_factor"] >= 1.0:
        best = max(best, r["streams"])
print(best)' "$out/gpu-streams.jsonl" 2>/dev/null || echo 0)
    stamp "kernel-only: $kernel_rt real-time streams (largest count tried with RTF >= 1)"
fi

# 2. The server: kernel 2 compiled for the voice and checked against the CPU reference at load.
stamp "dv-serve --device $device --slots $slots ${block_args[*]}"
t0=$(date +%s%N)
"$out/bin/dv-serve" --port "$port" --device "$device" --slots "$slots" --queue "$slots" "${block_args[@]}" \
    --voices "$here/inference/voices" --voice slt > "$out/server.log" 2>&1 &
server=$!
ready=0
for _ in $(seq 1 1800); do
    if curl -sf "$url/readyz" > /dev/null; then ready=1; break; fi
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
done
if [ $ready = 0 ]; then
    stamp "dv-serve did not get ready"; tail -20 "$out/server.log"; kill "$server" 2>/dev/null; exit 1
fi
stamp "ready after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
curl -s "$url/v1/audio/speech" -H 'Content-Type: application/json' \
    -d "{\"model\":\"tts-1\",\"input\":\"$text\",\"seed\":1}" -o "$out/one.wav"
ls -l "$out/one.wav" | awk '{print "one request (WAV, streamed): " $5 " bytes"}' | tee -a "$out/phases.txt"

# 3. Streams through HTTP at each concurrency.
: > "$out/levels.jsonl"
for n in "${levels[@]}"; do
    stamp "$n concurrent streams for $duration s"
    python3 "$here/benchmarks/serve/gpu_streams.py" "$url" "$n" "$duration" "$text" | tee -a "$out/levels.jsonl"
    curl -s "$url/metrics" > "$out/metrics-$n.txt"
    grep -E "^dv_serve_(slots|slot_|rendering|queue_depth|active_streams|real_time_factor_(sum|count)|renders_cancelled)" "$out/metrics-$n.txt" | tr '\n' ' '; echo
    # Per launch, this level alone (the counters are cumulative): where the time went.
    python3 - "$out" "$n" "${prev:-}" <<'PY' | tee -a "$out/launches.txt"
import sys
out, n, prev = sys.argv[1], sys.argv[2], sys.argv[3]
def read(p):
    d = {}
    for l in open(p):
        if l.startswith("dv_serve_slot") or l.startswith("dv_serve_conditioning_"):
            k, v = l.rsplit(None, 1)
            d[k] = float(v)
    return d
a = read(f"{out}/metrics-{n}.txt")
b = read(f"{out}/metrics-{prev}.txt") if prev else {}
d = {k: a[k] - b.get(k, 0.0) for k in a}
L = d.get("dv_serve_slot_launches_total", 0)
if L:
    ms = lambda k: 1000 * d.get(f"dv_serve_slot_{k}_seconds_total", 0) / L
    print(f"level {n}: {L:.0f} launches, {d['dv_serve_slot_samples_total'] / L:.0f} samples each; per launch ms: "
          + ", ".join(f"{k} {ms(k):.1f}" for k in ["stage", "upload", "kernel", "download", "gap", "wait", "scheduler_busy"])
          + f"; starved slot-launches {d.get('dv_serve_slot_starved_total', 0) / L:.1f} per launch")
c = {k[len("dv_serve_conditioning_"):]: d.get(k, 0.0) for k in d if k.startswith("dv_serve_conditioning_")}
B = c.get("batches_total", 0)
if B:
    print(f"level {n}: conditioning {B:.0f} batches, {c['sentences_total'] / B:.1f} sentences and "
          f"{c['frames_total'] / B:.0f} frames each, {1000 * c['seconds_total'] / B:.1f} ms each, "
          f"{c['frames_total'] / max(c['seconds_total'], 1e-9) / 1e6:.2f} M frames per busy second; per batch ms: "
          + ", ".join(p + " %.1f" % (1000 * c.get('phase_seconds_total{phase="' + p + '"}', 0) / B)
                      for p in ["staging", "upload", "products", "pooling"]))
PY
    prev=$n
done

# 4. oha (a second load generator) at the largest concurrency that stayed real time.
best=$(python3 -c '
import json, sys
best = 0
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["realtime_fraction"] >= 0.99 and r["ok"] > 0:
        best = max(best, r["concurrency"])
print(best)' "$out/levels.jsonl")
if [ "$best" -gt 0 ] && [ -x "$out/bin/oha" ]; then
    stamp "oha -c $best for 20 s"
    "$out/bin/oha" --no-tui --output-format json -z 20s -c "$best" -m POST -H "content-type: application/json" \
        -d "{\"model\":\"tts-1\",\"input\":\"$text\",\"response_format\":\"pcm\"}" "$url/v1/audio/speech" > "$out/oha.json" 2>&1
    python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
s = o.get("summary", {})
print("oha: success rate", s.get("successRate"), "requests/s", s.get("requestsPerSec"), "status", o.get("statusCodeDistribution"))' "$out/oha.json" | tee -a "$out/phases.txt"
fi
curl -s "$url/metrics" > "$out/metrics-end.txt"
kill -TERM "$server"; wait "$server"
stamp "server stopped (rc $?)"

# 5. The summary.
python3 - "$out" "$kernel_rt" "$device" <<'PY' | tee "$out/summary.md"
import json, sys
out, kernel, device = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = [json.loads(l) for l in open(f"{out}/levels.jsonl")]
best = max([r["concurrency"] for r in rows if r["realtime_fraction"] >= 0.99 and r["ok"] > 0], default=0)
print(f"device {device}; kernel-only real-time streams (gpu_bench gpu-streams): {kernel or 'not run'}")
print(f"through HTTP, the largest concurrency with >= 99 % of streams real-time: {best}"
      + (f" ({100 * best / kernel:.0f} % of the kernel-only figure; goal 80 %)" if kernel else ""))
print()
print("| concurrency | responses | ok | real-time | TTFA p50 ms | TTFA p99 ms | after the ramp: n, TTFA p50 / p99 ms | speed p1 | speed p50 | lag p99 s | statuses |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
ms = lambda v: "-" if v is None else f"{1000 * v:.0f}"
x = lambda v: "-" if v is None else f"{v:.2f}x"
for r in rows:
    lag = "-" if r["lag_p99_s"] is None else f"{r['lag_p99_s']:.2f}"
    print(f"| {r['concurrency']} | {r['responses']} | {r['ok']} | {100 * r['realtime_fraction']:.1f} % | "
          f"{ms(r['ttfa_p50_s'])} | {ms(r['ttfa_p99_s'])} | "
          f"{r.get('ttfa_steady_n', '-')}, {ms(r.get('ttfa_steady_p50_s'))} / {ms(r.get('ttfa_steady_p99_s'))} | {x(r['speed_p1'])} | {x(r['speed_p50'])} | {lag} | {r['statuses']} |")
PY
{ echo; echo "Per launch (dv-serve's /metrics, each level alone):"; cat "$out/launches.txt" 2>/dev/null; } | tee -a "$out/summary.md"
rm -rf "$out/bin" "$out/lib"
