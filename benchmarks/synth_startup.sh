#!/usr/bin/env bash
# `dv synth`'s whole-process wall time and peak RSS for a short sentence and
# a paragraph of about 15 s of speech (issue 42), beside hibari-tts on the
# same texts, in one run (benchmarks/cpu-inference.md, "`dv synth` start-up").
#
#   RUNS=5 benchmarks/synth_startup.sh [DV ...]
#
# DV: dv binaries to compare (default $CARGO_TARGET_DIR/release/dv), e.g. a
# build before a change and one after. They share one fresh $DV_HOME, so
# they use the same sampler calibration (measured once, by the first
# warm-up). Each case is run once untimed per binary (a warm-up that fills
# the caches, as a user's second `dv synth` finds them), then RUNS times,
# the binaries interleaved, so a change of machine load hits them alike.
# Prints per case and binary the median wall seconds and peak RSS (MiB)
# of /usr/bin/time, then each run. hibari-tts (PyPI hibari-tts) runs pinned
# to one core (taskset -c 0).
set -euo pipefail
cd "${REPO:-$(dirname "$0")/..}"
RUNS=${RUNS:-5}
if [ $# -eq 0 ]; then
    set -- "${CARGO_TARGET_DIR:-$HOME/.cache/deepvoice-rs/target}/release/dv"
fi
VOICE=inference/voices/slt
SHORT="Hello there, how are you today?"
PARAGRAPH="The old lighthouse stood at the edge of the cliff for more than a century. Every night its keeper climbed the narrow stairs, trimmed the wick and watched the beam sweep across the dark water, so that the fishing boats could find their way home through the storms of winter."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export DV_HOME=$work/home

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# case_ NAME TEXT CMD...: every CMD (dv binaries, or `hibari`) on TEXT.
case_() {
    local name=$1 text=$2 i k
    shift 2
    local -a cmds=("$@")
    for k in "${!cmds[@]}"; do
        : >"$work/times.$k"
        run "$k" "${cmds[$k]}" "$text" >"$work/log.$k" 2>&1 || { cat "$work/log.$k"; exit 1; } # warm-up
    done
    for i in $(seq "$RUNS"); do
        for k in "${!cmds[@]}"; do
            TIME="%e %M" TIMEFILE="$work/t" run "$k" "${cmds[$k]}" "$text" >"$work/log.$k" 2>&1 \
                || { cat "$work/log.$k"; exit 1; }
            cat "$work/t" >>"$work/times.$k"
        done
    done
    for k in "${!cmds[@]}"; do
        printf '%-10s %-44s %6.2f s %5.0f MiB   runs: %s\n' "$name" "${cmds[$k]}" \
            "$(cut -d' ' -f1 "$work/times.$k" | median)" \
            "$(cut -d' ' -f2 "$work/times.$k" | median | awk '{print $1 / 1024}')" \
            "$(awk '{printf "%s s/%d MiB  ", $1, $2 / 1024}' "$work/times.$k")"
        grep -h '^wrote' "$work/log.$k" | sed 's/^/           /' || true
    done
}

# run K CMD TEXT: CMD on TEXT, under /usr/bin/time when TIMEFILE is set.
run() {
    local -a timer=()
    [ -n "${TIMEFILE:-}" ] && timer=(/usr/bin/time -f "$TIME" -o "$TIMEFILE")
    if [ "$2" = hibari ]; then
        "${timer[@]}" taskset -c 0 python3 -c \
            'import sys; from hibari import Hibari; Hibari().save(sys.argv[1], sys.argv[2], seed=0)' \
            "$3" "$work/hibari.wav"
    else
        "${timer[@]}" "$2" synth --voice "$VOICE" -o "$work/out.$1.wav" "$3"
    fi
}

echo "# $(date -u +%FT%TZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, commit $(git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
case_ short "$SHORT" "$@" hibari
case_ paragraph "$PARAGRAPH" "$@" hibari
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
