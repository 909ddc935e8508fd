#!/usr/bin/env bash
# Packs the ked corpus (make_ked.py OUT/corpus) as .carry/ked/part-* (uncompressed tar of the FLAC
# corpus, in 20 MB parts) for gpu.sh: each call of a hold carries a few parts (64 MiB per call).
#   benchmarks/newspeaker/pack.sh OUT
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$here/.carry/ked" && mkdir -p "$here/.carry/ked"
tar cf - -C "$1" --transform 's,^corpus,ked,' corpus | split -b 20M -d -a 1 - "$here/.carry/ked/part-"
ls -la "$here/.carry/ked"
