#!/usr/bin/env bash
# The shipped voice's training on the GPU machine (issue 28): the embedded recipe at full size
# (7,982 utterances, about 8 h), two Table 2 WaveNet sizes side by side under MPS, and the
# duration/F0 model, resumed across machines from checkpoints carried back xz-compressed.
#
# Run from the repository root on the device machine, as consecutive calls on one warm machine:
#   benchmarks/voice/train.sh start  $OUT   # render + featurize (once per machine), MPS on, start
#                                           # every run in RUNS in the background (resumed from
#                                           # .carry/voice-ck/<run>.safetensors.xz when there),
#                                           # then watch until START_S (default 540) have passed
#   benchmarks/voice/train.sh watch  $OUT   # sleep WATCH_S (default 540); the curves; RETURN=<run>
#                                           # also returns that run's last checkpoint (xz, 15 MB parts)
#   benchmarks/voice/train.sh finish $OUT   # sleep FINISH_SLEEP_S (default 0), stop every run; for each
#                                           # WaveNet run a voice package in half precision (its last
#                                           # checkpoint + the duration/F0 model) as a tgz; RETURN=<run>
#                                           # as in watch
# Runs (RUNS, default "wn-40x64x256 wn-20x64x128 duration"): wn-LxRxS is the App. A WaveNet of
# that size (bf16 forward, fused step, batch WN_BATCH, default 16); duration is the §3.3 model
# (paper size, batch 128). Every run holds out the same 5 % of utterances (id hash, seed 0).
# Continued training: INIT_FROM=<voice package, relative to the repository> starts each WaveNet
# run from its weights ([init] in the run config) at WN_LR after WN_WARMUP warm-up steps;
# DURATION_FROM=<carried duration/F0 checkpoint> goes into the voice packages `finish` makes.
#
# Carried (.carry, made on the dev VM by benchmarks/voice/carry.sh): dv.xz, cmudict.dict,
# labels7982.tar.xz, render/ (hts_engine, sox, their libraries, the slt .htsvoice), and
# optionally voice-ck/<run>.step-N.safetensors.xz (or .xz.aa, .xz.ab, … parts, as `give_back`
# returns them: Adam's moments in bfloat16 by ckpt_pack.py) to resume from.
# Background runs use setsid so they outlive a call; they end with the machine.
set -uo pipefail
phase=$1 out=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/benchmarks/device_env.sh"
work_env "$here" "$out"   # $work, $dv (LD_LIBRARY_PATH), DV_HOME, DV_CMUDICT
n=${UTTERANCES:-7982}
corpus=$work/corpora/cmu_us_slt_fortunes_$n
features=$work/features/slt$n
runs=(${RUNS:-wn-40x64x256 wn-20x64x128 duration})
stamp() { echo "[$(date +%T)] $*" | tee -a "$out/phases.txt"; }

render_featurize() {
    [ -f "$features/manifest.json" ] && return
    mkdir -p "$work/corpora"
    tar xJf "$here/.carry/labels$n.tar.xz" -C "$work/corpora"
    local r=$here/.carry/render
    LD_LIBRARY_PATH="$r/lib:$LD_LIBRARY_PATH" "$dv" corpus make-default --utterances "$n" --out "$corpus" \
        --hts-engine "$r/bin/hts_engine" --sox "$r/bin/sox" --voice "$r/cmu_us_slt_arctic_hts.htsvoice" --jobs 15 \
        2>&1 | tail -3 | tee "$out/render.txt"
    stamp "rendered"
    "$dv" corpus inspect "$corpus" --manifest "$work/manifest$n.parquet" 2>&1 | head -20 > "$out/inspect.txt"
    "$dv" featurize --corpus "$corpus" --out "$features" --jobs 15 2>&1 | tail -4 | tee "$out/featurize.txt"
    stamp "featurized"
}

# config RUN: the run's config in $work/RUN.toml.
config() {
    local r=$1 d=$work/$1
    case $r in
    wn-*)
        IFS=x read -r l c s <<< "${r#wn-}"
        sed -e "s|@L@|$l|" -e "s|@R@|$c|" -e "s|@S@|$s|" -e "s|@BF16@|true|" -e "s|@BATCH@|${WN_BATCH:-16}|" \
            -e "s|@STEPS@|1000000|" -e "s|@LOG@|100|" -e "s|@VAL@|${WN_VAL:-2000}|" -e "s|@CKPT@|1000|" \
            -e "s|@PROFILE@|false|" -e "s|@FUSED@|true|" -e "s|@PREFETCH@|2|" -e "s|@DIR@|$d|g" \
            -e "s|@FEATURES@|$features|" -e "s/^device = \"cuda\"/device = \"cuda\"\nthreads_per_rank = 6/" \
            "$here/benchmarks/wavenet/wavenet.toml.in" > "$work/$r.toml"
        if [ -n "${INIT_FROM:-}" ]; then
            # continued training from a voice package's weights: Adam starts afresh, so warm up
            sed -i -e "s/^lr = 1e-3/lr = ${WN_LR:-1e-3}/" \
                -e "/^\[schedule\]/,/^\[train\]/ s/^every = 1000$/every = 1000\nwarmup = ${WN_WARMUP:-1000}/" "$work/$r.toml"
            printf '\n[init]\nfrom = "%s"\n' "$here/$INIT_FROM" >> "$work/$r.toml"
        fi
        ;;
    duration)
        sed -e "s#features/cmu_us_slt_fortunes_300#$features#" -e 's/^device = "cpu"/device = "cuda"\nthreads_per_rank = 2/' \
            -e 's/^batch = 16/batch = 128/' -e "s/^steps = 4000/steps = ${DUR_STEPS:-20000}/" -e 's/^keep_last = 2/keep_last = 1/' \
            -e "s#runs/duration-embedded/checkpoints#$d/ck#" -e "s#runs/duration-embedded/metrics.jsonl#$d/metrics.jsonl#" \
            -e 's/^every = 500/every = 1000/' -e 's/^validate_every = 500/validate_every = 1000/' \
            "$here/trainers/train/configs/duration-embedded.toml" > "$work/$r.toml"
        ;;
    esac
}

# resume RUN: the carried checkpoint (one .xz, or .xz.aa … parts) into RUN's checkpoint directory.
resume() {
    local r=$1 c=$here/.carry/voice-ck
    mkdir -p "$work/$r/ck"
    local first
    for first in "$c/$r".*.safetensors.xz "$c/$r".*.safetensors.xz.aa; do
        [ -e "$first" ] || continue
        local base=${first%.aa} name
        name=$(basename "${base%.xz}")
        name=${name#"$r".}
        if [ "$first" = "$base" ]; then xz -dc "$first"; else cat "$base".* | xz -dc; fi > "$work/$r/ck/$name.packed"
        python3 "$here/benchmarks/voice/ckpt_pack.py" unpack "$work/$r/ck/$name.packed" "$work/$r/ck/$name" && rm "$work/$r/ck/$name.packed"
        stamp "$r: resuming from $name ($(stat -c %s "$work/$r/ck/$name") bytes)"
    done
}

snapshot() {
    nvidia-smi --query-gpu=name,utilization.gpu,memory.used --format=csv > "$out/gpu.csv" 2>&1
    for r in "${runs[@]}"; do
        [ -d "$work/$r" ] || continue
        mkdir -p "$out/$r"
        cp "$work/$r/metrics.jsonl" "$work/$r.toml" "$out/$r/" 2>/dev/null
        tail -5 "$work/$r.log" > "$out/$r/log-tail.txt" 2>/dev/null
        ls "$work/$r/ck" > "$out/$r/checkpoints.txt" 2>/dev/null
        "$dv" plot "$work/$r/metrics.jsonl" --out "$out/$r/loss.png" > /dev/null 2>&1
        stamp "$r: $(grep -o '"step":[0-9]*' "$work/$r/metrics.jsonl" 2>/dev/null | tail -1), $(grep -o '"step":[0-9]*,"time":[0-9.]*,"val_loss":[0-9.]*' "$work/$r/metrics.jsonl" 2>/dev/null | tail -1)"
    done
}

# give_back RUN: RUN's last checkpoint, xz-compressed, split into 15 MB parts under $out/ck.
give_back() {
    local r=$1 ck
    ck=$(ls "$work/$r/ck"/step-*.safetensors 2>/dev/null | tail -1)
    [ -n "$ck" ] || { stamp "$r: no checkpoint to return"; return; }
    mkdir -p "$out/ck"
    python3 "$here/benchmarks/voice/ckpt_pack.py" pack "$ck" "/tmp/$r.packed" > /dev/null
    xz -T0 -6 -c "/tmp/$r.packed" | split -b 15M - "$out/ck/$r.$(basename "$ck").xz."
    # the packed checkpoint must load again: unpack it and let dv decode it (CRC, state)
    python3 "$here/benchmarks/voice/ckpt_pack.py" unpack "/tmp/$r.packed" "/tmp/$r.check.safetensors" > /dev/null \
        && "$dv" export --checkpoint "/tmp/$r.check.safetensors" --model-only "/tmp/$r.check-model.safetensors" 2>&1 \
        | tail -1 | tee -a "$out/phases.txt"
    rm -f "/tmp/$r.packed" "/tmp/$r".check*
    stamp "$r: returned $(basename "$ck") ($(du -cb "$out/ck/$r".* | tail -1 | cut -f1) bytes xz)"
}

case $phase in
start)
    stamp "start on $(nvidia-smi --query-gpu=name --format=csv,noheader)"
    render_featurize
    [ -n "${MPS:-1}" ] && mps_on "$out/phases.txt"
    for r in "${runs[@]}"; do
        config "$r"
        resume "$r"
        (cd "$work" && setsid nohup "$dv" train --config "$r.toml" > "$r.log" 2>&1 &)
        stamp "$r started (background)"
    done
    while [ "$SECONDS" -lt "${START_S:-540}" ]; do sleep 10; done
    snapshot
    ;;
watch)
    sleep "${WATCH_S:-540}"
    snapshot
    [ -n "${RETURN:-}" ] && give_back "$RETURN"
    ;;
finish)
    sleep "${FINISH_SLEEP_S:-0}"
    for r in "${runs[@]}"; do pkill -f "config $r.toml"; done
    sleep 5
    snapshot
    # the duration/F0 model with the best held-out loss (it overfits past ~20,000 steps of batch 128)
    dur=$(ls "$work/duration/ck"/best.safetensors "$work/duration/ck"/step-*.safetensors 2>/dev/null | head -1)
    # or a carried one (DURATION_FROM, relative to the repository) when this hold trains no duration run
    [ -z "$dur" ] && [ -n "${DURATION_FROM:-}" ] && dur=$here/$DURATION_FROM
    for r in "${runs[@]}"; do
        case $r in wn-*) ;; *) continue ;; esac
        ck=$(ls "$work/$r/ck"/step-*.safetensors 2>/dev/null | tail -1)
        [ -n "$ck" ] || continue
        v=$work/voice-$r
        rm -rf "$v"
        # half precision; the G2P is added on the dev VM (dv export --voice V --g2p G), to keep the return small
        "$dv" export --checkpoint "$ck" --features "$features" ${dur:+--duration "$dur"} --half \
            --out "$v" 2>&1 | tail -3 | tee -a "$out/phases.txt"
        tar czf "$out/voice-$r.tgz" -C "$work" "voice-$r" && stamp "$r: voice package from $(basename "$ck")"
    done
    [ -n "${RETURN:-}" ] && give_back "$RETURN"
    [ -n "$dur" ] && cp "$dur" "$out/duration-$(basename "$dur")"
    ;;
esac
# the logs and curves in one archive (the return keeps at most 8 files)
# (the return keeps at most 8 files: the logs, curves and small files go in one archive)
tar czf "/tmp/logs-$$.tgz" -C "$out" --exclude=ck --exclude='*.tgz' --exclude='duration-*' . && mv "/tmp/logs-$$.tgz" "$out/logs.tgz" \
    && (cd "$out" && find . -mindepth 1 -maxdepth 1 -not -name ck -not -name '*.tgz' -not -name 'duration-*' -not -name phases.txt -exec rm -rf {} +)
