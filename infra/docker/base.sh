#!/usr/bin/env bash
# The serving image's base, made from Debian packages where no image registry can be reached:
# what gcr.io/distroless/cc-debian12:nonroot gives dv-serve (glibc, libgcc, a nonroot user
# 65532, a writable /tmp; no shell, no package manager), extracted from Debian bookworm by
# mmdebstrap and imported into podman.
#
#   infra/docker/base.sh [--force]    # makes localhost/dv-base:bookworm unless it exists
#
# dv-serve links only libc, libm and libgcc_s (ldd); dv-serve's images take this base as
# `--build-arg BASE=localhost/dv-base:bookworm` (infra/docker/serve.Dockerfile). Packages come
# from the host's apt sources (MIRROR overrides: a URL, or a file of apt sources).
set -euo pipefail

IMAGE="${DV_BASE_IMAGE:-localhost/dv-base:bookworm}"
PACKAGES=libc6,libgcc-s1

if [ "${1:-}" != "--force" ] && podman image exists "$IMAGE"; then
    echo "base.sh: $IMAGE exists (--force makes it again)" >&2
    exit 0
fi
for tool in mmdebstrap podman; do
    command -v "$tool" >/dev/null || { echo "base.sh: $tool is missing (apt-get install mmdebstrap podman)" >&2; exit 1; }
done

mirrors=()
if [ -n "${MIRROR:-}" ]; then
    mirrors=("$MIRROR")
fi
# extract: the packages' files and nothing else (no Essential set, no maintainer scripts), so
# the hooks add what a container needs: the users distroless has, a sticky /tmp, and a home.
# The timestamps of files the hooks make are the mmdebstrap run's; the package files keep theirs.
mmdebstrap --quiet --variant=extract --include="$PACKAGES" --format=tar \
    --customize-hook='mkdir -p -m 1777 "$1/tmp"' \
    --customize-hook='mkdir -p -m 0700 "$1/root" "$1/home/nonroot" && chown 65532:65532 "$1/home/nonroot"' \
    --customize-hook='printf "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n" > "$1/etc/passwd"' \
    --customize-hook='printf "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n" > "$1/etc/group"' \
    --customize-hook='rm -rf "$1/etc/apt" "$1/var/lib/apt" "$1/var/cache/apt"' \
    bookworm - "${mirrors[@]}" \
    | podman import --quiet \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --message "mmdebstrap --variant=extract --include=$PACKAGES bookworm" \
        - "$IMAGE" >/dev/null
echo "base.sh: made $IMAGE ($(podman image inspect --format '{{.Size}}' "$IMAGE") bytes)" >&2
