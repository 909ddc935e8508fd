#!/usr/bin/env bash
# Issue 41 on the GPU machine (nvidia-h200-x2): the finetune preset on an hour of hibari-tts's
# voice, four variants at once, two to a GPU under MPS (hibari-*.toml in this folder). The corpus
# is rendered there from the carried sentence list and hibari-tts wheel, in seconds on its cores.
#
# Carried (.carry/, made by hibari_carry.sh on the dev VM): dv.xz, cmudict.dict.xz,
# hibari/hibari_tts-*.whl, hib-sentences.tsv.
#   benchmarks/newspeaker/hibari_gpu.sh start  $OUT   # render, start the recipes; snapshot at START_S
#   benchmarks/newspeaker/hibari_gpu.sh watch  $OUT   # sleep WATCH_S; snapshot
#   benchmarks/newspeaker/hibari_gpu.sh finish $OUT   # wait (FINISH_S) for all; export the kept
#                                                     # WaveNet checkpoints (STEPS) as voices with
#                                                     # the duration/F0 model; return them with each
#                                                     # recipe's evaluate/ (RESYNTH=1: resynth first)
# MINUTES (default 60) is the corpus's length; hibari-preset-{20,120}min.toml read 20 and 120.
# RECIPES (default the four) and GPUS (one CUDA_VISIBLE_DEVICES per recipe) choose the variants.
# The process patterns name the unpacked binary (/bin/dv recipe run), so that they never match a
# shell whose own command line names a recipe (a device call once killed itself that way): start
# and resume recipes through this script's phases, not from the call's command line.
#   benchmarks/newspeaker/hibari_gpu.sh resume $OUT   # start RECIPES again on GPUS (each resumes
#                                                     # from its lock and checkpoints), then finish
#   benchmarks/newspeaker/hibari_gpu.sh bench  $OUT   # the WaveNet step on 1 and 2 GPUs (TIMING, see
#                                                     # benchmarks/wavenet/gpu.sh) on FROM's aligned features
#   benchmarks/newspeaker/hibari_gpu.sh resynth $OUT  # each recipe's held-out utterances spoken by its
#                                                     # newest voice from their true durations and F0
# GPUS entries are CUDA_VISIBLE_DEVICES values: "0,1" gives one recipe both GPUs (issue 43). MPS=0
# leaves the multi-process service off (it is on by default, for several recipes on one GPU).
set -uo pipefail
phase=$1 out=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/benchmarks/device_env.sh"
work_env "$here" "$out"   # $work, $dv, DV_HOME, DV_CMUDICT
read -r -a recipes <<< "${RECIPES:-hibari-a-robust hibari-b-inherit hibari-c-inherit-jitter hibari-d-robust-jitter}"
read -r -a gpus <<< "${GPUS:-0 0 1 1}"
minutes=${MINUTES:-60}   # the corpus that start renders, corpora/hibari$MINUTES (the recipes' corpus)
stamp() { echo "[$(date +%T)] $*" | tee -a "$out/phases.txt"; }

snapshot() { recipe_snapshot; }   # benchmarks/device_env.sh
# start_recipes VERB: each of RECIPES on its GPUS entry, in the background (VERB: started, resumed)
start_recipes() {
    for i in "${!recipes[@]}"; do
        r=${recipes[$i]}
        (cd "$work" && CUDA_VISIBLE_DEVICES=${gpus[$i]} setsid nohup "$dv" recipe run \
            "$here/benchmarks/newspeaker/$r.toml" >> "$r.log" 2>&1 &)
        stamp "$r $1 on GPU ${gpus[$i]} (background)"
    done
}

# resynth: each recipe's held-out utterances spoken by its voice from their true durations and F0
# (evaluate/listen/resynth/, beside the recipe's own evaluate/listen/heldout from text)
resynth() {
    for r in "${recipes[@]}"; do
        o=$work/recipes/$r
        v=$o/voice
        [ -d "$v" ] || { stamp "$r: no voice"; continue; }
        mkdir -p "$o/evaluate/listen/resynth"
        python3 -c "import sys; sys.path.insert(0, '$here/benchmarks/voice'); import listen_table as t
for u, _, _ in t.heldout_set('$work/corpora/hibari$minutes/metadata.tsv', 40): print(u)" | xargs -P "$(nproc)" -I{} \
            "$dv" synth --voice "$v" --features "$o/features-aligned" --utterance {} --f32 --threads 1 \
            -o "$o/evaluate/listen/resynth/{}.wav" > /dev/null 2>> "$out/resynth-$r.err"
        stamp "$r: $(ls "$o/evaluate/listen/resynth" | wc -l) held-out utterances spoken from their true durations and F0"
    done
}

case $phase in
start)
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee -a "$out/phases.txt"
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$here"/.carry/hibari/*.whl || exit 1
    export PYTHONPATH=/tmp/site
    t0=$SECONDS
    python3 "$here/benchmarks/newspeaker/make_hibari.py" render "$here/.carry/hib-sentences.tsv" \
        "$work/corpora/hibari$minutes" --minutes "$minutes" --jobs "$(nproc)" 2>&1 | tail -2 | tee -a "$out/phases.txt"
    stamp "corpus rendered in $((SECONDS - t0)) s on $(nproc) cores: $(du -sh "$work/corpora/hibari$minutes" | cut -f1)"
    [ "${MPS:-1}" = 1 ] && mps_on "$out/phases.txt"
    start_recipes started
    while [ "$SECONDS" -lt "${START_S:-500}" ]; do sleep 10; done
    snapshot
    ;;
resume)
    start_recipes resumed
    exec bash "$0" finish "$out"
    ;;
start-only)  # the recipes started on the corpus an earlier call rendered; returns at START_S
    start_recipes started
    while [ "$SECONDS" -lt "${START_S:-500}" ]; do sleep 10; done
    snapshot
    ;;
bench)
    FEATURES=$work/recipes/${FROM:?a recipe whose features-aligned to time on}/features-aligned \
        TIMING=${TIMING:-20 64 128 true 16 1 20 64 128 true 32 2 40 64 256 true 8 1 40 64 256 true 16 2} \
        TIMING_STEPS=${TIMING_STEPS:-60} TIMING_SKIP=${TIMING_SKIP:-20} \
        bash "$here/benchmarks/wavenet/gpu.sh" <(xz -T0 -0 -c "$dv")  "$out/bench" 2>&1 | tail -20
    rm -rf "$out/bench/bin" "$out/bench/lib"
    (cd "$out/bench" && tar czf ../bench.tgz . ) && rm -rf "$out/bench"
    ;;
resynth)
    resynth
    ;;
watch)
    sleep "${WATCH_S:-0}"
    snapshot
    ;;
finish)
    while [ "$SECONDS" -lt "${FINISH_S:-480}" ] && pgrep -f "/bin/dv recipe run .*hibari-" > /dev/null; do sleep 10; done
    snapshot
    [ "${RESYNTH:-0}" = 1 ] && resynth
    pack=$work/pack && rm -rf "$pack" && mkdir -p "$pack"
    for r in "${recipes[@]}"; do
        o=$work/recipes/$r
        [ -d "$o" ] || continue
        if pgrep -f "/bin/dv recipe run .*$r[.]toml" > /dev/null; then
            stamp "$r still running: stopped; its newest checkpoint exported below"
            pkill -TERM -f "/bin/dv recipe run .*$r[.]toml"; sleep 15; pkill -KILL -f "/bin/dv recipe run .*$r[.]toml"
        fi
        mkdir -p "$pack/$r"
        cp "$o"/report.md "$o"/recipe.lock "$pack/$r/" 2>/dev/null
        cp -r "$o/logs" "$pack/$r/" 2>/dev/null
        (cd "$o" && tar cf - evaluate aligned/report.json aligned/alignments.parquet 2>/dev/null) | tar xf - -C "$pack/$r" 2>/dev/null
        for m in "$o"/runs/*/*/metrics.jsonl; do
            cp "$m" "$pack/$r/$(basename "$(dirname "$(dirname "$m")")").metrics.jsonl"
        done
        du=$(ls "$o"/runs/train-duration/*/checkpoints/best.safetensors 2>/dev/null | tail -1)
        newest=$(ls "$o"/runs/train-wavenet/*/checkpoints/step-*.safetensors 2>/dev/null | sort | tail -1)
        # the voices to score on the dev VM: WaveNet and duration/F0 model, no G2P (7.6 MB, the same
        # in every variant; added back there with `dv export --voice V --g2p`)
        for s in ${STEPS:-4000 7000 10000} newest; do
            if [ "$s" = newest ]; then ck=$newest; else ck=$(ls "$o"/runs/train-wavenet/*/checkpoints/step-$(printf %010d "$s").safetensors 2>/dev/null); fi
            [ -n "$ck" ] && [ -n "$du" ] || continue
            n=$(basename "$ck" .safetensors | sed 's/step-0*//')
            [ -d "$pack/$r/voice-$n" ] && continue
            "$dv" export --checkpoint "$ck" --features "$o/features-aligned" --half --out "$work/wn-$r-$n" > /dev/null \
                && "$dv" export --voice "$work/wn-$r-$n" --duration "$du" --features "$o/features-aligned" \
                    --out "$pack/$r/voice-$n" > /dev/null \
                && stamp "$r: exported step $n"
        done
    done
    tar cf - -C "$pack" . | xz -T0 -6 | split -b 15M - "$out/hibari.tar.xz."
    stamp "returned $(cat "$out"/hibari.tar.xz.* | wc -c) bytes"
    ;;
esac
