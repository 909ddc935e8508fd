#!/usr/bin/env bash
# Hours of embedded corpus on the GPU machine, and what they train (issues 5 and 6).
# Run from the repository root on the device machine, as consecutive calls on one warm machine:
#   benchmarks/hours/run.sh start  $OUT   # unpack; start the paper-size G2P (background);
#                                         # render 5,000 utterances from the carried labels,
#                                         # featurize them, start the segmentation runs (background)
#   benchmarks/hours/run.sh watch  $OUT   # sleep WATCH_S (default 540), then copy the logs back
#   benchmarks/hours/run.sh finish $OUT   # stop the segmentation runs; G2P PER/WER (beam 5, all
#                                         # test words, on the GPU); `dv align` of the held-out set
#   G2P_DROPOUT=0.3 G2P_STEPS=6000 benchmarks/hours/run.sh g2p $OUT
#                                         # the paper-size G2P alone in the foreground with another
#                                         # dropout, then PER/WER of its best-on-dev and last checkpoints
#                                         # (G2P_BG=1: in the background; `g2p-eval` evaluates it later;
#                                         # G2P_ATTENTION=true: with attention, not in §3.1;
#                                         # G2P_SMOOTHING=0.1: label smoothing, not in §3.1;
#                                         # G2P_SEED=N: the [train] seed (init, batch order; default 0);
#                                         # G2P_DEV_FRACTION=F: the dev share (default 0.05; a smaller one
#                                         # trains on the rest of the dev words, the test words unchanged);
#                                         # G2P_REVERSE=1: right to left ([data] reverse, a model
#                                         # that rescores: dv evaluate --rescore-with);
#                                         # G2P_RUN=NAME: the run's name (default g2p-dropout), so
#                                         # that two runs can share the GPU; NO_PACK=1 leaves $OUT
#                                         # unpacked, for phases run side by side, then `pack`)
#   ENSEMBLE_RUNS="g2p-s1 g2p-s2" benchmarks/hours/run.sh ensemble $OUT   (default: seeds.sh's runs)
#                                         # waits (G2P_WAIT_S) for those background G2P runs, then PER/WER
#                                         # of each one's last checkpoint and of all of them decoded as an
#                                         # ensemble (`dv evaluate --with`), on the test and dev words
#   benchmarks/hours/run.sh prepare $OUT  # render + featurize only (features at $WORK/features/slt5000)
#   benchmarks/hours/run.sh wavenet $OUT  # render + featurize if not yet; the (40, 64, 256) WaveNet
#                                         # in the background, resumed from .carry/wavenet-ck/ if there
#                                         # (the parts `wavenet-finish` returns, or one .safetensors.xz)
#   benchmarks/hours/run.sh wavenet-finish $OUT   # stop it; its curve and last checkpoint (split)
# Carried (.carry, made on the dev VM): dv.xz, cmudict.dict, labels5000.tar.xz (from
# `dv corpus make-default --utterances 5000 --labels-only`), render/ (hts_engine, sox, their
# libraries and the slt .htsvoice copied from Debian 12). Work directory: $WORK (/root/dvwork).
# Background runs use setsid so they outlive a call; they end with the machine.
set -uo pipefail
phase=$1 out=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/benchmarks/device_env.sh"
work_env "$here" "$out"   # $work, $dv (LD_LIBRARY_PATH), DV_HOME, DV_CMUDICT
corpus=$work/corpora/cmu_us_slt_fortunes_5000
features=$work/features/slt5000
run=${G2P_RUN:-g2p-dropout}
stamp() { echo "[$(date +%T)] $*" | tee -a "$out/phases.txt"; }

# The G2P run config: the compact one with the paper preset on the GPU.
g2p_config() {
    sed -e 's/^preset = "compact"/preset = "paper"/' -e 's/^device = "cpu"/device = "cuda"/' \
        -e "s#runs/g2p-compact#$work/g2p-paper#g" -e 's/^keep_last = 2/keep_last = 1/' \
        "$here/trainers/train/configs/g2p-compact.toml" > "$work/g2p-paper.toml"
    # it shares the machine with a segmentation run: a few libtorch threads each (with a
    # thread per core each, the two ran 3-6x slower than alone: run -a)
    sed -i "s/^device = \"cuda\"/device = \"cuda\"\nthreads_per_rank = ${G2P_THREADS:-3}/" "$work/g2p-paper.toml"
}

# seg_config NAME CONV GRU LAYERS BATCH LR: a segmentation run on the 5,000 utterances.
seg_config() {
    sed -e "s/^conv_channels = 8/conv_channels = $2/" -e "s/^gru = 64/gru = $3/" \
        -e "s/^gru_layers = 2/gru_layers = $4/" -e "s/^batch = 8/batch = $5/" -e "s/^lr = 1e-3/lr = $6/" \
        -e "s#features/cmu_us_slt_fortunes_300#$features#" -e 's/^device = "cpu"/device = "cuda"/' \
        -e 's/^steps = 3000/steps = 100000/' -e 's/^validate_every = 200/validate_every = 500/' \
        -e 's/^every = 200/every = 500/' -e 's/^keep_last = 3/keep_last = 2/' -e 's/^log_every = 20/log_every = 100/' \
        -e "s#runs/segmentation-embedded#$work/$1#g" -e "s/^device = \"cuda\"/device = \"cuda\"\nthreads_per_rank = ${SEG_THREADS:-8}/" \
        "$here/trainers/train/configs/segmentation-embedded.toml" > "$work/$1.toml"
}

snapshot() {
    nvidia-smi --query-gpu=name,utilization.gpu,memory.used --format=csv > "$out/gpu.csv" 2>&1
    for t in "$work"/*.toml; do   # every run started on this machine
        r=$(basename "$t" .toml)
        [ -d "$work/$r" ] || continue
        mkdir -p "$out/$r"
        cp "$work/$r/metrics.jsonl" "$out/$r/" 2>/dev/null
        cp "$work/$r.toml" "$out/$r/run.toml" 2>/dev/null
        tail -5 "$work/$r.log" > "$out/$r/log-tail.txt" 2>/dev/null
        ls "$work/$r/checkpoints" > "$out/$r/checkpoints.txt" 2>/dev/null
    done
}

# Renders the carried labels and featurizes them, once per machine.
render_featurize() {
    [ -f "$features/manifest.json" ] && return
    mkdir -p "$work/corpora"
    tar xJf "$here/.carry/labels5000.tar.xz" -C "$work/corpora"
    local r=$here/.carry/render
    LD_LIBRARY_PATH="$r/lib:$LD_LIBRARY_PATH" "$dv" corpus make-default --utterances 5000 --out "$corpus" \
        --hts-engine "$r/bin/hts_engine" --sox "$r/bin/sox" --voice "$r/cmu_us_slt_arctic_hts.htsvoice" --jobs 14 \
        2>&1 | tail -3 | tee "$out/render.txt"
    stamp "rendered"
    "$dv" corpus inspect "$corpus" --manifest "$work/manifest5000.parquet" 2>&1 | tee "$out/inspect.txt" | head -20
    "$dv" featurize --corpus "$corpus" --out "$features" --jobs 14 2>&1 | tail -4 | tee "$out/featurize.txt"
    stamp "featurized"
}

case $phase in
start)
    stamp "start on $(nvidia-smi --query-gpu=name --format=csv,noheader)"
    g2p_config
    (cd "$work" && setsid nohup "$dv" train --config g2p-paper.toml > g2p-paper.log 2>&1 &)
    stamp "G2P paper-size training started (background)"
    render_featurize
    seg_config seg-mid 32 256 3 32 1e-3
    for r in seg-mid; do
        (cd "$work" && setsid nohup "$dv" train --config $r.toml > $r.log 2>&1 &)
    done
    stamp "segmentation runs started (background)"
    sleep "${START_TAIL_S:-60}"
    snapshot
    ;;
prepare)
    render_featurize
    ;;
wavenet)
    # The (40, 64, 256) WaveNet, bf16, one GPU, on the 5,000 utterances' chunks (background).
    # Resumes from a checkpoint carried in .carry/wavenet-ck/ as 15 MB parts (what `wavenet-finish`
    # returns under ck/).
    render_featurize
    d=$work/wavenet
    mkdir -p "$d/ck"
    for first in "$here"/.carry/wavenet-ck/*.safetensors.{aa,xz}; do   # parts, or xz (smaller to carry)
        [ -e "$first" ] || continue
        name=$(basename "${first%.*}")
        case $first in
        *.xz) xz -dc "$first" > "$d/ck/$name" ;;
        *) cat "$here/.carry/wavenet-ck/$name".* > "$d/ck/$name" ;;
        esac
        stamp "resuming from $name ($(stat -c %s "$d/ck/$name") bytes)"
    done
    sed -e "s|@L@|40|" -e "s|@R@|64|" -e "s|@S@|256|" -e "s|@BF16@|true|" -e "s|@BATCH@|8|" -e "s|@STEPS@|1000000|" \
        -e "s|@LOG@|50|" -e "s|@VAL@|1000|" -e "s|@CKPT@|500|" -e "s|@PROFILE@|false|" -e "s|@FUSED@|${FUSED:-true}|" -e "s|@DIR@|$d|g" \
        -e "s|@FEATURES@|$features|" -e "s/^device = \"cuda\"/device = \"cuda\"\nthreads_per_rank = ${WN_THREADS:-8}/" \
        "$here/benchmarks/wavenet/wavenet.toml.in" > "$work/wavenet.toml"
    (cd "$work" && setsid nohup "$dv" train --config wavenet.toml > wavenet.log 2>&1 &)
    stamp "WaveNet training started (background)"
    sleep "${START_TAIL_S:-60}"
    snapshot
    ;;
wavenet-finish)
    pkill -f "config [w]avenet" ; sleep 3
    snapshot
    d=$work/wavenet
    "$dv" plot "$d/metrics.jsonl" --out "$out/wavenet/loss.png" > /dev/null 2>&1
    ck=$(ls "$d/ck"/step-*.safetensors | tail -1)
    mkdir -p "$out/ck" && split -b 15M "$ck" "$out/ck/$(basename "$ck")."   # cat parts > checkpoint
    stamp "WaveNet stopped at $(basename "$ck")"
    ;;
g2p)
    g2p_config
    sed -i -e 's/^preset = "paper"/[model.sizes]\nembed = 256\nhidden = 1024\nlayers = 3\nbeam = 5\ndropout = '"$G2P_DROPOUT"'\nattention = '"${G2P_ATTENTION:-false}"'\nlabel_smoothing = '"${G2P_SMOOTHING:-0.0}"'/' \
        -e "s/^steps = 20000/steps = $G2P_STEPS/" -e "s/^threads_per_rank = .*/threads_per_rank = ${G2P_THREADS:-8}/" \
        -e "s#$work/g2p-paper#$work/$run#g" -e 's/^keep_last = 1/keep_last = 2/' \
        -e "/^\[train\]/,/^\[/ s/^seed = 0/seed = ${G2P_SEED:-0}/" \
        -e "s/^dev_fraction = 0.05/dev_fraction = ${G2P_DEV_FRACTION:-0.05}/" "$work/g2p-paper.toml"
    [ -n "${G2P_REVERSE:-}" ] && sed -i "s/^dev_fraction = .*/&\nreverse = true/" "$work/g2p-paper.toml"
    mv "$work/g2p-paper.toml" "$work/$run.toml"
    stamp "G2P $run: dropout $G2P_DROPOUT, attention ${G2P_ATTENTION:-false}, smoothing ${G2P_SMOOTHING:-0.0}, seed ${G2P_SEED:-0}, dev fraction ${G2P_DEV_FRACTION:-0.05}, $G2P_STEPS steps${G2P_REVERSE:+, right to left}"
    if [ -n "${G2P_BG:-}" ]; then   # background: `g2p-eval` evaluates it later
        (cd "$work" && setsid nohup "$dv" train --config $run.toml > $run.log 2>&1 &)
        stamp "G2P $run started (background)"
    else
        (cd "$work" && "$dv" train --config $run.toml > $run.log 2>&1)
        G2P_WAIT_S=0 "$0" g2p-eval "$out"
        exit
    fi
    ;;
g2p-eval)
    # Waits for the G2P run to end (at most G2P_WAIT_S), then chooses among its last checkpoint, its
    # best on dev loss and the mean of its last two (checkpoint averaging) by WER on the dev words,
    # and scores the chosen one (and the last, as earlier runs were scored) on the test words.
    for _ in $(seq "${G2P_WAIT_S:-0}"); do pgrep -f "config $run.toml" > /dev/null || break; sleep 1; done
    if pgrep -f "config $run.toml" > /dev/null; then   # out of time: evaluate what it has
        pkill -f "config $run.toml"; sleep 3
        stamp "G2P $run: stopped before its last step"
    fi
    mkdir -p "$out/$run"
    cp "$work/$run/metrics.jsonl" "$work/$run.toml" "$out/$run/"
    tail -3 "$work/$run.log" > "$out/$run/log-tail.txt"
    c=$work/$run/checkpoints
    steps=($(ls "$c"/step-*.safetensors | tail -2))
    last=${steps[${#steps[@]}-1]}
    cands=("$last" "$c/best.safetensors")
    if [ ${#steps[@]} = 2 ]; then
        "$dv" export --checkpoint "${steps[0]}" --average "${steps[1]}" --model-only "$work/$run-avg2.safetensors" \
            | tee -a "$out/$run/eval.txt" && cands+=("$work/$run-avg2.safetensors")
    fi
    # one at a time: three side by side (3 CPU threads each) each took over 170 s where one alone takes
    # 84 s (run h200-2026-11-23-f)
    best_wer=1000 chosen=$last
    for ck in "${cands[@]}"; do
        stamp "G2P $run: dev evaluation of $ck"
        line=$(timeout "${EVAL_S:-240}" "$dv" evaluate --checkpoint "$ck" --device cuda --dev 2>&1 | grep "WER")
        echo "$ck: $line" | tee -a "$out/$run/eval.txt"
        wer=$(echo "$line" | sed -n 's/^[^W]*WER \([0-9.]*\)%.*/\1/p')
        if [ -n "$wer" ] && python3 -c "import sys; sys.exit(not $wer < $best_wer)"; then best_wer=$wer chosen=$ck; fi
    done
    stamp "G2P $run: chosen on the dev words: $chosen (WER $best_wer%)"
    for ck in $(printf '%s\n' "$chosen" "$last" | uniq); do
        stamp "G2P $run: test evaluation of $ck"
        timeout "${EVAL_S:-240}" "$dv" evaluate --checkpoint "$ck" --device cuda 2>&1 | tail -2 | tee -a "$out/$run/eval.txt"
    done
    "$dv" plot "$work/$run/metrics.jsonl" --out "$out/$run/loss.png" > /dev/null 2>&1
    stamp "G2P $run: finished"
    ;;
ensemble)
    runs=(${ENSEMBLE_RUNS:-$(cat "$work/ensemble-runs.txt")})
    for _ in $(seq "${G2P_WAIT_S:-0}"); do
        alive=0; for r in "${runs[@]}"; do pgrep -f "config [${r:0:1}]${r:1}.toml" > /dev/null && alive=1; done
        [ $alive = 0 ] && break; sleep 1
    done
    mkdir -p "$out/ensemble"
    lasts=()
    for r in "${runs[@]}"; do
        if pgrep -f "config [${r:0:1}]${r:1}.toml" > /dev/null; then
            pkill -f "config [${r:0:1}]${r:1}.toml"; sleep 3; stamp "G2P $r: stopped before its last step"
        fi
        mkdir -p "$out/$r"
        cp "$work/$r/metrics.jsonl" "$work/$r.toml" "$out/$r/"
        tail -3 "$work/$r.log" > "$out/$r/log-tail.txt"
        "$dv" plot "$work/$r/metrics.jsonl" --out "$out/$r/loss.png" > /dev/null 2>&1
        lasts+=("$(ls "$work/$r/checkpoints"/step-*.safetensors 2>/dev/null | tail -1)")
    done
    # a run that wrote no checkpoint is left out of the evaluations
    for i in "${!runs[@]}"; do
        [ -n "${lasts[$i]}" ] || { stamp "G2P ${runs[$i]}: no checkpoint, left out"; unset 'runs[i]' 'lasts[i]'; }
    done
    runs=("${runs[@]}") lasts=("${lasts[@]}")
    [ ${#runs[@]} -gt 0 ] || { stamp "no run to evaluate"; exit 1; }
    # each member on the test words, side by side (4 libtorch threads each)
    for i in "${!runs[@]}"; do
        (OMP_NUM_THREADS=4 timeout "${EVAL_S:-300}" "$dv" evaluate --checkpoint "${lasts[$i]}" --device cuda 2>&1 \
            | tail -2 > "$out/${runs[$i]}/eval.txt") &
    done
    wait
    for r in "${runs[@]}"; do stamp "G2P $r: $(head -1 "$out/$r/eval.txt")"; done
    withs=(); for ck in "${lasts[@]:1}"; do withs+=(--with "$ck"); done
    for part in test dev; do
        flag=; [ $part = dev ] && flag=--dev
        (OMP_NUM_THREADS=8 timeout "${EVAL_S:-300}" "$dv" evaluate --checkpoint "${lasts[0]}" "${withs[@]}" $flag \
            --device cuda 2>&1 | tail -2 > "$out/ensemble/eval-$part.txt") &
    done
    wait
    for part in test dev; do stamp "ensemble of ${#runs[@]} ($part): $(head -1 "$out/ensemble/eval-$part.txt")"; done
    ;;
pack)   # packs $OUT after phases run side by side with NO_PACK=1
    ;;
watch)
    sleep "${WATCH_S:-540}"
    snapshot
    stamp "watched"
    ;;
finish)
    pkill -f "config [s]eg-" ; sleep 3
    snapshot
    last=$(ls "$work/g2p-paper/checkpoints"/step-*.safetensors | tail -1)
    stamp "G2P evaluation of $last"
    timeout "${EVAL_S:-240}" "$dv" evaluate --checkpoint "$last" --device cuda 2>&1 | tail -2 | tee "$out/g2p-paper/eval.txt"
    for r in seg-mid seg-paper; do
        ck=$(ls "$work/$r/checkpoints"/step-*.safetensors 2>/dev/null | tail -1)
        [ -n "$ck" ] || continue
        for split in ${ALIGN_SPLITS:-held-out}; do
            flag=$([ $split = held-out ] && echo --held-out)
            timeout 150 "$dv" align --features "$features" --checkpoint "$ck" --device cuda --batch 32 \
                --out "$work/aligned-$r-$split" $flag 2>&1 | tail -12 > "$out/$r/align-$split.txt"
            cp "$work/aligned-$r-$split/report.json" "$out/$r/align-$split.json"
        done
        "$dv" plot "$work/$r/metrics.jsonl" --out "$out/$r/loss.png" > /dev/null 2>&1
        mkdir -p "$out/ck" && split -b 15M "$ck" "$out/ck/$r-$(basename "$ck")."   # cat parts > checkpoint
    done
    "$dv" plot "$work/g2p-paper/metrics.jsonl" --out "$out/g2p-paper/loss.png" > /dev/null 2>&1
    stamp "finished"
    ;;
esac
[ -n "${NO_PACK:-}" ] && exit 0
tar czf "/tmp/all-$$.tgz" -C "$out" --exclude=all.tgz --exclude=ck . && mv "/tmp/all-$$.tgz" "$out/all.tgz" && cd "$out" && find . -mindepth 1 -not -name all.tgz -not -name phases.txt -not -path './ck*' -delete
