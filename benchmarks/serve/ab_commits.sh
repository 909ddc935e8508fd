#!/usr/bin/env bash
# dv-serve built at several commits, measured one after another in one device call: for changes
# whose effects were only measured in sequence (benchmarks/serve.md, "After the goal").
#
# On the dev VM (one cargo build at a time; each commit in a scratch worktree, the shared target
# directory keeps the dependencies):
#   benchmarks/serve/ab_commits.sh build main ab/gather ab/priority ab/fopool ab/dot ab/batchcap   # -> .carry/ab/<ref>-<commit>.xz
# On the device machine (carry .carry/ab, .carry/gpu_bench.xz, .carry/cmudict.dict):
#   SLOTS=4224 LEVELS=4224 RAMP=10 DURATION=20 benchmarks/serve/ab_commits.sh run $OUT
# prints each build's summary (gpu.sh) and copies it to $OUT/<ref>-<commit>.md.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
ab=$here/.carry/ab
case "${1:-}" in
build)
    shift
    set -e
    mkdir -p "$ab"
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/deepvoice-rs/target} LIBTORCH_USE_PYTORCH=1
    for c in "$@"; do
        rev=$(git -C "$here" rev-parse --short "$c^{commit}")
        name=${c//\//-}-$rev
        tree=$(mktemp -d /tmp/ab-XXXXXX)
        git -C "$here" worktree add --detach "$tree" "$rev" > /dev/null
        trap 'git -C "$here" worktree remove --force "$tree"' EXIT
        (cd "$tree" && cargo build -q -p dv-serve)
        strip -o "$ab/$name" "$CARGO_TARGET_DIR/debug/dv-serve" && xz -T2 -6 -f "$ab/$name"
        git -C "$here" worktree remove --force "$tree"
        trap - EXIT
        echo "$name: $(du -k "$ab/$name.xz" | cut -f1) KiB"
    done
    ;;
run)
    out=${2:?usage: ab_commits.sh run OUT}
    # Oldest build first (the order they were built in).
    for x in $(ls -tr "$ab"/*.xz); do
        rev=$(basename "$x" .xz)
        echo "== $rev"
        DV_SERVE_XZ=$x KERNEL_RT=${KERNEL_RT:-5280} "$here/benchmarks/serve/gpu.sh" "/tmp/ab-$rev" > "/tmp/ab-$rev.log" 2>&1 ||
            { echo "gpu.sh failed:"; tail -5 "/tmp/ab-$rev.log"; }
        cp "/tmp/ab-$rev/summary.md" "$out/$rev.md" 2>/dev/null && sed -n '2p;4,30p' "$out/$rev.md"
    done
    ;;
*)
    echo "usage: ab_commits.sh build COMMIT... | run OUT" >&2
    exit 2
    ;;
esac
