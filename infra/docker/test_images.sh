#!/usr/bin/env bash
# Builds the serving image with podman, starts it, waits for /readyz and listens to its speech.
#
#   infra/docker/test_images.sh [--release] [--runs N]
#
# The base is infra/docker/base.sh's (Debian packages by mmdebstrap; made once, then reused);
# dv-serve is the host's build ($CARGO_TARGET_DIR/debug/dv-serve, or release/ with --release),
# given to infra/docker/serve.Dockerfile as the build context dv-serve-prefix together with the
# shipped voices, as install_serve lays them out (no Rust toolchain in the image: Debian 12's
# rustc is too old for the workspace, and no registry holds rust:1-bookworm here). Each of N
# runs (default 1) times `podman run` to the first 200 from /readyz; the first one asks
# POST /v1/audio/speech for a sentence and fails unless whisper (infra/dv/src/recipe/listen.py)
# hears it with a WER of at most 25 %. Prints the image's size, each time to ready and the
# WER; removes every container and the image it made, also on failure. Exits 0 with a line
# saying why when podman or mmdebstrap is missing (infra/run test installs both).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
profile=debug
runs=1
while [ $# -gt 0 ]; do
    case "$1" in
        --release) profile=release ;;
        --runs) runs="$2"; shift ;;
        *) echo "usage: infra/docker/test_images.sh [--release] [--runs N]" >&2; exit 2 ;;
    esac
    shift
done

for tool in podman mmdebstrap curl python3; do
    if ! command -v "$tool" >/dev/null; then
        echo "test_images.sh: skipped: $tool is missing (apt-get install podman mmdebstrap runc curl)" >&2
        exit 0
    fi
done
bin="${CARGO_TARGET_DIR:-$HOME/.cache/deepvoice-rs/target}/$profile/dv-serve"
[ -x "$bin" ] || { echo "test_images.sh: no $bin (cargo build -p dv-serve${profile/debug/}${profile/release/ --release})" >&2; exit 1; }
if ! python3 "$here/infra/dv/src/recipe/listen.py" --available | grep -q '"whisper": true'; then
    echo "test_images.sh: whisper is missing (infra/install.sh ensure_listen_python)" >&2
    exit 1
fi

# What this machine's podman needs, harmless elsewhere: runc, since crun 1.8 (Debian 12) refuses
# a cgroup hierarchy that mixes v1 and v2 controllers (the dev VM's); explicit limits, since
# podman's defaults (nofile 1048576) exceed the hard limits of a host without CAP_SYS_RESOURCE.
engine=(podman)
if command -v runc >/dev/null; then
    engine+=(--runtime runc)
fi
limits=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)

image="localhost/deepvoice-rs/serve:test-$$"
work="$(mktemp -d)"
containers=()
cleanup() {
    for c in "${containers[@]}"; do
        podman rm -f -t 2 "$c" >/dev/null 2>&1 || true
    done
    podman rmi -f "$image" >/dev/null 2>&1 || true
    # The prebuilt stage's image, left by podman's layer cache.
    podman image prune -f --filter label=io.github.deepvoice-rs.stage=prebuilt >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# log and install_voices
# shellcheck source=infra/install.sh
source "$here/infra/install.sh"

"$here/infra/docker/base.sh"

# The prefix install_serve would make, from the host's binary.
install -D -m 0755 "$bin" "$work/prefix/bin/dv-serve"
install_voices "$work/prefix"

log "building $image ($profile dv-serve) on localhost/dv-base:bookworm"
"${engine[@]}" build --quiet -f "$here/infra/docker/serve.Dockerfile" \
    --build-arg BASE=localhost/dv-base:bookworm --build-arg DV_SERVE=prebuilt \
    --build-context dv-serve-prefix="$work/prefix" -t "$image" "$here" >/dev/null
size=$(podman image inspect --format '{{.Size}}' "$image")
log "image size: $size bytes ($((size / 1000000)) MB)"

text="This voice speaks from a container that was built from Debian packages."
for run in $(seq 1 "$runs"); do
    start=$(date +%s%N)
    cid=$("${engine[@]}" run -d "${limits[@]}" -p 127.0.0.1::8080 "$image")
    containers+=("$cid")
    url="http://$(podman port "$cid" 8080/tcp)"
    ready=""
    for _ in $(seq 1 1200); do
        if ready=$(curl -sf "$url/readyz" 2>/dev/null); then
            break
        fi
        if [ "$(podman inspect --format '{{.State.Running}}' "$cid")" != true ]; then
            break
        fi
        sleep 0.05
    done
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    if ! grep -q '"status":"ready"' <<<"$ready"; then
        log "run $run: no 200 from $url/readyz after $ms ms; the container's log:"
        podman logs "$cid" >&2 || true
        exit 1
    fi
    log "run $run: /readyz answered $ready $ms ms after podman run"
    if [ "$run" -eq 1 ]; then
        user=$(podman top "$cid" user | tail -n +2 | tr -d ' ')
        [ "$user" = 65532 ] || { log "dv-serve runs as $user in the image, not 65532"; exit 1; }
        code=$(curl -s -o "$work/speech.wav" -w '%{http_code}' "$url/v1/audio/speech" \
            -H 'content-type: application/json' \
            -d "{\"model\": \"deepvoice\", \"input\": \"$text\", \"response_format\": \"wav\"}")
        [ "$code" = 200 ] || { log "POST /v1/audio/speech: HTTP $code: $(head -c 300 "$work/speech.wav")"; exit 1; }
        python3 - "$text" "$work/speech.wav" > "$work/items.json" <<'EOF'
import json, sys
print(json.dumps([{"id": "image", "reference": sys.argv[1], "audio": {"serve": sys.argv[2]}}]))
EOF
        metrics=whisper
        python3 "$here/infra/dv/src/recipe/listen.py" --available | grep -q '"pocketsphinx": true' && metrics+=,pocketsphinx
        python3 "$here/infra/dv/src/recipe/listen.py" "$work/items.json" --metrics "$metrics" -o "$work/heard.json" 2>/dev/null
        python3 - "$work/heard.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
total = r["summary"]["all"]["serve"]
kinds = r["items"][0]["kinds"]["serve"]
for m in r["metrics"]:
    print(f"test_images.sh: {m} heard {kinds[m]['heard']!r}: WER {total[m + '_wer']:.3f} "
          f"({total['seconds']} s of speech)", file=sys.stderr)
if total["whisper_wer"] > 0.25:
    sys.exit(f"test_images.sh: whisper's WER {total['whisper_wer']:.3f} is above 0.25: not the sentence")
EOF
    fi
    podman rm -f -t 2 "$cid" >/dev/null
done
log "ok: the serving image builds, becomes ready and speaks"
