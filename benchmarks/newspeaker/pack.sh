#!/usr/bin/env bash
# Packs the ked corpus (make_ked.py OUT/corpus) for gpu.sh: an uncompressed tar of the FLAC corpus
# in 1 MB parts, dealt into .carry/ked/c1, c2, … of at most the sizes given (MB each; what the
# calls of a hold can carry beside their other files), each with COUNT (all parts).
#   benchmarks/newspeaker/pack.sh OUT 20 23 40
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
src=$1; shift
k=$here/.carry/ked
rm -rf "$k" && mkdir -p "$k/all"
tar cf - -C "$src" --transform 's,^corpus,ked,' corpus | split -b 1000000 -d -a 3 - "$k/all/part-"
parts=("$k"/all/part-*)
i=0 c=0
for mb in "$@"; do
    c=$((c + 1)); mkdir -p "$k/c$c"; echo "${#parts[@]}" > "$k/c$c/COUNT"
    for ((j = 0; j < mb && i < ${#parts[@]}; j++, i++)); do mv "${parts[$i]}" "$k/c$c/"; done
done
[ "$i" -eq "${#parts[@]}" ] || { echo "pack.sh: ${#parts[@]} parts, only $i dealt: give more MB" >&2; exit 1; }
rmdir "$k/all"
du -sb "$k"/c*
