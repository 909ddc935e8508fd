#!/usr/bin/env bash
# Intelligibility of a voice on the ked corpus's held-out utterances (issue 30).
#
#   benchmarks/newspeaker/intelligibility.sh VOICE_DIR OUT_DIR [N]
#
# Builds, once, an ARCTIC-layout view of make_ked.py's FLAC corpus (etc/txt.done.data,
# wav/<id>.wav; ids are the table reader's: the audio file's name without extension,
# e.g. ked_00012), then runs benchmarks/voice/intelligibility.py on it with the conditions
# ref (ked's recordings) and text (VOICE_DIR speaking the same sentences from text), the
# synthesis niced. Held-out utterances are those every training run left out (id hash,
# seed 0, fraction 0.05: 44 of the 876 ked ids), in id order; N of them (default: all).
#
# Environment (defaults):
#   KED=/root/voicework/ked/k70           make_ked.py's output (corpus/metadata.tsv, corpus/wav/)
#   ARCTIC=/root/voicework/ked/arctic     where the ARCTIC-layout view goes
#   DV=/root/.cache/deepvoice-rs/target/debug/dv
#   DV_CMUDICT=<repo>/.carry/cmudict.dict when unset and present
#   SYNTH_ARGS="--int16 --threads 2"
# Needs: flac, sox, python3 with numpy and pocketsphinx.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
    exit 2
fi
VOICE=$1
OUT=$2
N=${3:-1000000}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
KED=${KED:-/root/voicework/ked/k70}
ARCTIC=${ARCTIC:-/root/voicework/ked/arctic}
DV=${DV:-/root/.cache/deepvoice-rs/target/debug/dv}
SYNTH_ARGS=${SYNTH_ARGS:---int16 --threads 2}
if [[ -z "${DV_CMUDICT:-}" && -f "$REPO/.carry/cmudict.dict" ]]; then
    export DV_CMUDICT="$REPO/.carry/cmudict.dict"
fi

META=$KED/corpus/metadata.tsv
[[ -f $META ]] || { echo "$META: missing (run make_ked.py first)" >&2; exit 1; }
[[ -d $VOICE ]] || { echo "$VOICE: no such voice directory" >&2; exit 1; }
[[ -x $DV ]] || { echo "$DV: no dv binary (set DV=)" >&2; exit 1; }
for tool in flac sox python3; do
    command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done

# The ARCTIC view: decoded once; a rerun decodes only what is missing and rewrites the prompts.
python3 - "$META" "$ARCTIC" <<'EOF'
import os, subprocess, sys
meta, arctic = sys.argv[1:]
base = os.path.dirname(meta)
rows = []
for n, line in enumerate(open(meta, encoding="utf-8"), 1):
    line = line.rstrip("\n")
    if not line.strip():
        continue
    path, sep, text = line.partition("\t")
    if not sep:
        sys.exit(f"{meta}: line {n}: expected path<TAB>text")
    # the table reader's id: the file name without extension (unique in this corpus; checked below)
    uid = os.path.splitext(os.path.basename(path))[0]
    rows.append((uid, os.path.join(base, path), text.strip()))
ids = [u for u, _, _ in rows]
if len(set(ids)) != len(ids):
    sys.exit(f"{meta}: two audio files share a name; the table reader's ids would be paths, not names")
os.makedirs(os.path.join(arctic, "etc"), exist_ok=True)
os.makedirs(os.path.join(arctic, "wav"), exist_ok=True)
made = 0
for uid, src, _ in rows:
    dst = os.path.join(arctic, "wav", uid + ".wav")
    if os.path.isfile(dst) and os.path.getsize(dst) > 44:
        continue
    tmp = dst + ".tmp"
    subprocess.run(["flac", "-d", "-s", "-f", "-o", tmp, src], check=True)
    os.replace(tmp, dst)
    made += 1
prompts = os.path.join(arctic, "etc", "txt.done.data")
with open(prompts + ".tmp", "w", encoding="utf-8") as f:
    for uid, _, text in rows:
        f.write('( %s "%s" )\n' % (uid, text.replace("\\", "\\\\").replace('"', '\\"')))
os.replace(prompts + ".tmp", prompts)
print(f"{arctic}: {len(rows)} utterances ({made} decoded now)", file=sys.stderr)
EOF

mkdir -p "$OUT"
set -x
nice -n 10 python3 "$REPO/benchmarks/voice/intelligibility.py" --dv "$DV" --voice "$VOICE" --corpus "$ARCTIC" \
    --out "$OUT" --conditions ref,text --n "$N" --synth-args "$SYNTH_ARGS"
