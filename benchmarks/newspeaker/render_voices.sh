#!/usr/bin/env bash
# Issue 41: the voices of a GPU hold speak the novel and held-out sentences on the GPU machine's
# cores (a minute there; an hour of the dev VM's two), for listen_table.py to judge on the dev VM.
# Carried: .carry/dv.xz, .carry/voices/NAME/ (voice packages without G2P, as hibari_gpu.sh finish
# returns them), .carry/hibari60/metadata.tsv (the corpus's text, for the held-out sentences).
#   benchmarks/newspeaker/render_voices.sh $OUT        # returns wavs.tar.xz.* (NAME/{novel,heldout}/ID.wav)
# Dev VM: unpack, then listen_table.py --system NAME=wavs:DIR/NAME ...
set -uo pipefail
out=$1
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/benchmarks/device_env.sh"
work_env "$here" "$out"   # $work, $dv
systems=()
for v in "$here"/.carry/voices/*/; do
    name=$(basename "$v")
    "$dv" export --voice "$v" --g2p "$here/trainers/train/models/g2p-compact.safetensors" --out "$work/voices/$name" > /dev/null || exit 1
    systems+=(--system "$name=dv:$work/voices/$name:--f32 --threads 1")
done
t0=$SECONDS
python3 "$here/benchmarks/voice/listen_table.py" --render-only --jobs "$(nproc)" --dv "$dv" --out "$work/wavs" \
    --heldout "$here/.carry/hibari60/metadata.tsv" --heldout-n 40 "${systems[@]}" 2>&1 | tail -8
echo "rendered in $((SECONDS - t0)) s on $(nproc) cores"
tar cf - -C "$work/wavs" . | xz -T0 -6 | split -b 15M - "$out/wavs.tar.xz."
ls -la "$out"
