#!/usr/bin/env bash
# Issue 30's proof on the GPU machine: the recipe on a speaker the project never saw (ked, made on
# the dev VM by make_ked.py and pack.sh), twice at once: from scratch (ked-scratch.toml) and
# fine-tuned from the shipped voice (ked-finetune.toml). Both run in the background (setsid, so
# they outlive a call) and resume stage by stage if started again on the same machine.
#
# The corpus (FLAC, about 80 MB) is larger than one call carries (64 MiB with the tracked tree's
# 26 MB), so it comes in 1 MB parts over the calls of one hold: each call carries one of
# .carry/ked/c1, c2, … (pack.sh) and `stash` keeps its parts in $work.
#   benchmarks/newspeaker/gpu.sh stash  $OUT   # keep the carried parts
#   benchmarks/newspeaker/gpu.sh start  $OUT   # stash, unpack (all parts there), start both recipes
#   benchmarks/newspeaker/gpu.sh watch  $OUT   # sleep WATCH_S (default 0); each recipe's progress
#   benchmarks/newspeaker/gpu.sh finish $OUT   # wait for both (at most FINISH_S, default 540 s);
#                                              # return what they made (no checkpoints or features),
#                                              # <recipe>.tar.xz.aa, .ab, … (cat them to unpack),
#                                              # and a recipe still running its WaveNet's newest
#                                              # checkpoints, <recipe>.{wavenet,duration}.step-N.safetensors.xz
#                                              # (EXPORT_CUT=1: stopped, and exported from them to
#                                              # <recipe>.voice-cut.tar.xz)
# RECIPES="ked-finetune-long" runs other TOMLs of this folder (later holds).
set -uo pipefail
phase=$1 out=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/benchmarks/device_env.sh"
work_env "$here" "$out"   # $work, $dv (LD_LIBRARY_PATH), DV_HOME, DV_CMUDICT
# RECIPES: which of this folder's TOMLs to run (default both of the first hold)
read -r -a recipes <<< "${RECIPES:-ked-scratch ked-finetune}"
stamp() { echo "[$(date +%T)] $*" | tee -a "$out/phases.txt"; }

stash() {
    mkdir -p "$work/ked-parts"
    for p in "$here"/.carry/ked/*/part-*; do
        [ -e "$p" ] && cp "$p" "$work/ked-parts/"
    done
    stamp "ked parts in $work: $(ls "$work/ked-parts" | wc -l) of $(cat "$here"/.carry/ked/*/COUNT 2>/dev/null | head -1)"
}

snapshot() { recipe_snapshot; }   # benchmarks/device_env.sh

case $phase in
stash) stash ;;
start)
    stash
    n=$(ls "$work/ked-parts" | wc -l) want=$(cat "$here"/.carry/ked/*/COUNT | head -1)
    [ "$n" -eq "$want" ] || { stamp "have $n of $want parts: not starting"; exit 1; }
    mkdir -p "$work/corpora"
    cat "$work"/ked-parts/part-* | tar x -C "$work/corpora"
    stamp "corpus: $(wc -l < "$work/corpora/ked/metadata.tsv") utterances, $(du -sh "$work/corpora/ked" | cut -f1)"
    for r in "${recipes[@]}"; do
        (cd "$work" && setsid nohup "$dv" recipe run "$here/benchmarks/newspeaker/$r.toml" > "$r.log" 2>&1 &)
        stamp "$r started (background)"
    done
    while [ "$SECONDS" -lt "${START_S:-300}" ]; do sleep 10; done
    snapshot
    ;;
watch)
    sleep "${WATCH_S:-0}"
    snapshot
    ;;
finish)
    while [ "$SECONDS" -lt "${FINISH_S:-540}" ] && pgrep -f "recipe run .*ked-" > /dev/null; do sleep 10; done
    snapshot
    for r in "${recipes[@]}"; do
        o=$work/recipes/$r
        [ -d "$o" ] || continue
        # everything small: logs, the lock, reports, PNGs, samples, the aligner's output, the voice
        (cd "$o" && find . -path ./features -prune -o -path ./features-text -prune -o -path ./features-aligned -prune \
            -o -name '*.safetensors' -path '*/runs/*' -prune -o -path ./corpus-cache -prune \
            -o -type f -size -16M -print0 | tar cf - --null -T - | xz -T0 -6 | split -b 15M - "$out/$r.tar.xz.")
        if pgrep -f "recipe run .*$r.toml" > /dev/null; then
            # cut short by the hold: its WaveNet's and duration/F0 model's newest checkpoints too,
            # for `dv export` elsewhere
            state="still running; returned"
            for m in wavenet duration; do
                ck=$(ls "$o"/runs/train-$m/*/checkpoints/step-*.safetensors 2>/dev/null | sort | tail -1)
                [ -n "$ck" ] && xz -T0 -6 -c "$ck" > "$out/$r.$m.$(basename "$ck").xz"
                state="$state $m ${ck:+$(basename "$ck")}"
            done
            # and, with EXPORT_CUT=1, stopped and exported from those checkpoints as the recipe's
            # export stage does (the F0 normalization needs the aligned features, which stay here)
            if [ "${EXPORT_CUT:-0}" = 1 ]; then
                pkill -TERM -f "recipe run .*$r.toml"; sleep 20; pkill -KILL -f "recipe run .*$r.toml"
                wn=$(ls "$o"/runs/train-wavenet/*/checkpoints/step-*.safetensors | sort | tail -1)
                du=$(ls "$o"/runs/train-duration/*/checkpoints/best.safetensors | tail -1)
                rm -rf "$o/voice-cut-wavenet" "$o/voice-cut"
                "$dv" export --checkpoint "$wn" --features "$o/features-aligned" --half --out "$o/voice-cut-wavenet" \
                    && "$dv" export --voice "$o/voice-cut-wavenet" --duration "$du" --features "$o/features-aligned" \
                        --g2p "$here/trainers/train/models/g2p-compact.safetensors" --out "$o/voice-cut" \
                    && tar cJf "$out/$r.voice-cut.tar.xz" -C "$o" voice-cut \
                    && state="$state; exported $(basename "$wn") as voice-cut"
            fi
        else
            state=done
        fi
        stamp "$r: returned $(cat "$out/$r.tar.xz."* | wc -c) bytes in 15 MB parts ($state)"
    done
    ;;
esac
