#!/usr/bin/env bash
# Our MFCC + pitch against librosa + parselmouth, side by side on the same audio, one thread
# each (and ours on 2 threads). Needs the embedded corpus (infra/run demo) and
# `pip install librosa==0.11.0 praat-parselmouth==0.4.7`.
set -euo pipefail
cd "$(dirname "$0")/.."
wavs="${1:-${DV_HOME:-$HOME/.cache/deepvoice-rs}/corpora/cmu_us_slt_fortunes_300/wav}"
n="${2:-60}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${DV_HOME:-$HOME/.cache/deepvoice-rs}/target}" LIBTORCH_USE_PYTORCH=1
cargo run -q --release -p dv-audio --example dsp_bench -- "$wavs" "$n" 1 2
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python3 benchmarks/dsp_throughput.py "$wavs" "$n"
