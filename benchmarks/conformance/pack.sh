#!/usr/bin/env bash
# Builds the conformance suite's three test binaries here (cargo test --no-run) and carries them,
# stripped and xz-compressed, as .carry/conformance/{gpu,align,fused}.xz for gpu.sh on the device.
# Run from anywhere in the repository; prints the sizes.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/deepvoice-rs/target} LIBTORCH_USE_PYTORCH=1
mkdir -p .carry/conformance
for pair in dv-gpu:gpu dv-align:align dv-fused:fused; do
    pkg=${pair%%:*} name=${pair##*:}
    exe=$(cargo test -p "$pkg" --test it --no-run --message-format=json 2>/dev/null |
        python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "it":
        print(m["executable"])')
    [ -n "$exe" ] || { echo "no test binary for $pkg" >&2; exit 1; }
    strip -o ".carry/conformance/$name" "$exe"
    xz -9 -T2 -f ".carry/conformance/$name"
    echo "$pkg: $exe -> .carry/conformance/$name.xz ($(du -k ".carry/conformance/$name.xz" | cut -f1) KiB)"
done
git rev-parse HEAD > .carry/conformance/REV
