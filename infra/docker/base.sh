#!/usr/bin/env bash
# The images' bases, made from Debian packages where no image registry can be reached, by
# mmdebstrap from Debian bookworm and imported into podman:
#
#   infra/docker/base.sh [serve|train] [--force]   # makes the base unless it exists
#
# serve  localhost/dv-base:bookworm: what gcr.io/distroless/cc-debian12:nonroot gives dv-serve
#        (glibc, libgcc, a nonroot user 65532, a writable /tmp; no shell, no package manager).
#        dv-serve links only libc, libm and libgcc_s (ldd). infra/docker/serve.Dockerfile takes
#        it as `--build-arg BASE=localhost/dv-base:bookworm`.
# train  localhost/dv-base-apt:bookworm: Debian's minbase (apt, bash, libstdc++) with python3
#        and its venv module, in place of the CUDA runtime image: the torch wheel brings the
#        CUDA libraries dv links. infra/docker/train.Dockerfile takes it as
#        `--build-arg CUDA_BASE=localhost/dv-base-apt:bookworm`.
#
# Packages come from the host's apt sources (MIRROR overrides: a URL, or a file of apt sources).
set -euo pipefail

flavor=serve
force=""
for arg in "$@"; do
    case "$arg" in
        serve|train) flavor="$arg" ;;
        --force) force=1 ;;
        *) echo "usage: infra/docker/base.sh [serve|train] [--force]" >&2; exit 2 ;;
    esac
done

if [ "$flavor" = serve ]; then
    image="${DV_BASE_IMAGE:-localhost/dv-base:bookworm}"
    packages=libc6,libgcc-s1
    # extract: the packages' files and nothing else (no Essential set, no maintainer scripts),
    # so the hooks add what a container needs: the users distroless has, a sticky /tmp, homes.
    options=(--variant=extract
        --customize-hook='mkdir -p -m 1777 "$1/tmp"'
        --customize-hook='mkdir -p -m 0700 "$1/root" "$1/home/nonroot" && chown 65532:65532 "$1/home/nonroot"'
        --customize-hook='printf "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n" > "$1/etc/passwd"'
        --customize-hook='printf "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n" > "$1/etc/group"'
        --customize-hook='rm -rf "$1/etc/apt" "$1/var/lib/apt" "$1/var/cache/apt"')
else
    image="${DV_BASE_IMAGE:-localhost/dv-base-apt:bookworm}"
    packages=ca-certificates,python3,python3-venv
    options=(--variant=minbase)
fi

if [ -z "$force" ] && podman image exists "$image"; then
    echo "base.sh: $image exists (--force makes it again)" >&2
    exit 0
fi
for tool in mmdebstrap podman; do
    command -v "$tool" >/dev/null || { echo "base.sh: $tool is missing (apt-get install mmdebstrap podman)" >&2; exit 1; }
done

mirrors=()
if [ -n "${MIRROR:-}" ]; then
    mirrors=("$MIRROR")
fi
mmdebstrap --quiet "${options[@]}" --include="$packages" --format=tar bookworm - "${mirrors[@]}" \
    | podman import --quiet \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --message "mmdebstrap ${options[0]} --include=$packages bookworm" \
        - "$image" >/dev/null
echo "base.sh: made $image ($(podman image inspect --format '{{.Size}}' "$image") bytes)" >&2
