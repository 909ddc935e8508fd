#!/bin/sh
# Runs every fuzz target in turn for SECONDS each (default 600), one job at
# the lowest priority, with the limits of issue 32: no panic, no input over
# 10 s, no more than 2 GB resident. New inputs go to fuzz/corpus/<target>
# (not committed); the committed seeds are fuzz/seeds/<target>, and
# fuzz/dicts/<target>.dict, where there is one, is passed as the dictionary
# (the TOML targets' keys and edge values); a crasher is written to
# fuzz/artifacts/<target>/. Logs: fuzz/logs/<target>.log.
#   fuzz/run.sh [SECONDS] [TARGET...]
set -u
cd "$(dirname "$0")"
secs=${1:-600}
[ $# -gt 0 ] && shift
targets=${*:-"audio_decode corpus_index xwaves_lab est_f0 hts_labels textgrid voice_config voice_weights text_normalize g2p serve_request run_config recipe_file"}
export RUSTC_BOOTSTRAP=1
target_dir=${CARGO_TARGET_DIR_FUZZ:-$HOME/.cache/deepvoice-rs/fuzz-target}
mkdir -p logs
for t in $targets; do
    mkdir -p "corpus/$t"
    max_len=4096
    [ "$t" = voice_weights ] && max_len=262144
    dict=
    [ -f "dicts/$t.dict" ] && dict="-dict=dicts/$t.dict"
    start=$(date +%s)
    nice -n 19 cargo fuzz run --sanitizer none --target-dir "$target_dir" "$t" "corpus/$t" "seeds/$t" -- \
        -rss_limit_mb=2048 -timeout=10 -max_len=$max_len -max_total_time="$secs" -print_final_stats=1 $dict \
        >"logs/$t.log" 2>&1
    rc=$?
    end=$(date +%s)
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$')
    cov=$(grep -o 'cov: [0-9]*' "logs/$t.log" | tail -1)
    echo "$(date -u +%FT%TZ) $t exit=$rc seconds=$((end - start)) execs=${execs:-?} ${cov:-}"
done
