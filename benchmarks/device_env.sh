# Sourced by the device scripts (benchmarks/gpu/*.sh, benchmarks/serve/*.sh, benchmarks/align/gpu_viterbi.sh, …):
# binaries built on the dev VM and carried xz-compressed, unpacked on the device with the library
# path pointed at the device's torch wheel (torch, CUDA 13 with NVRTC, NCCL under the libnccl.so
# name cudarc loads). The scripts remove OUT/bin and OUT/lib at the end.
# `carried_bin XZ OUT NAME`: XZ unpacked as the executable OUT/bin/NAME, and LD_LIBRARY_PATH set
# (with OUT/lib).
carried_bin() {
    local xz=$1 out=$2 file=$2/bin/$3 site
    mkdir -p "$out/bin" "$out/lib"
    # unpacked beside and renamed, so a binary still running from an earlier call keeps its file
    xz -dc "$xz" > "$file.$$" && chmod +x "$file.$$" && mv -f "$file.$$" "$file"
    site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
    ln -sf "$site/nvidia/nccl/lib/libnccl.so.2" "$out/lib/libnccl.so"
    export LD_LIBRARY_PATH="$out/lib:$site/torch/lib:$site/nvidia/cu13/lib:$site/nvidia/nccl/lib:${LD_LIBRARY_PATH:-}"
}
# `device_env DV_XZ OUT`: the carried, xz-compressed dv unpacked as OUT/bin/dv, and $dv set.
device_env() {
    carried_bin "$1" "$2" dv
    dv=$2/bin/dv
}
# `bench_env BENCH_XZ OUT`: the carried GPU bench (dv-gpu's example `gpu_bench`, `dv bench` until
# issue 44; benchmarks/gpu/carry.sh makes .carry/gpu_bench.xz) unpacked as OUT/bin/gpu_bench and
# $gpu_bench set, plus the PTX of every kernel compiled kept under OUT/ptx and the GPU's name,
# driver and clocks in OUT/gpus.csv. `gpu_bench_env` is the same without the PTX and gpus.csv
# (the Nsight Compute scripts).
gpu_bench_env() {
    carried_bin "$1" "$2" gpu_bench
    gpu_bench=$2/bin/gpu_bench
}
bench_env() {
    mkdir -p "$2/ptx"
    gpu_bench_env "$1" "$2"
    export DV_GPU_DUMP_PTX=$2/ptx
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$2/gpus.csv"
}
# `mps_on LOG`: starts the CUDA multi-process service, so that several processes' kernels share
# the GPU at once instead of taking turns (eight G2P trainings: 2.1x the throughput of four
# without it, run h100-2026-11-24-d in benchmarks/hours.md); off again if a client cannot start under it.
# It lasts until `echo quit | nvidia-cuda-mps-control` or the machine goes back.
mps_on() {
    if command -v nvidia-cuda-mps-control > /dev/null && nvidia-cuda-mps-control -d; then
        if timeout 90 python3 -c "import torch; print(torch.ones(4, device='cuda').sum().item())" > /dev/null; then
            echo "MPS on" | tee -a "$1"
        else
            echo quit | nvidia-cuda-mps-control; sleep 2; echo "MPS: a client failed, MPS off" | tee -a "$1"
        fi
    else
        echo "MPS: cannot start, off" | tee -a "$1"
    fi
}
# `work_env HERE OUT`: the G2P device scripts' common start: OUT and the work directory $work
# ($WORK, default /root/dvwork) made, HERE/.carry/dv.xz unpacked there (device_env), DV_HOME set,
# and DV_CMUDICT where HERE/.carry/cmudict.dict(.xz) is carried.
# Without HERE/.carry/dv.xz (a later call of one hold that carries other things), the dv an
# earlier call unpacked there is used.
work_env() {
    work=${WORK:-/root/dvwork}
    mkdir -p "$work" "$2"
    if [ -f "$1/.carry/dv.xz" ]; then
        device_env "$1/.carry/dv.xz" "$work"
    else
        local site
        site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
        export LD_LIBRARY_PATH="$work/lib:$site/torch/lib:$site/nvidia/cu13/lib:$site/nvidia/nccl/lib:${LD_LIBRARY_PATH:-}"
        dv=$work/bin/dv
    fi
    # CMUDict: dv has its own built-in copy; one carried as it is or xz-compressed overrides it
    # (DV_CMUDICT), kept in $work for the later calls of a hold
    [ -f "$1/.carry/cmudict.dict.xz" ] && xz -dc "$1/.carry/cmudict.dict.xz" > "$work/cmudict.dict"
    [ -f "$1/.carry/cmudict.dict" ] && cp "$1/.carry/cmudict.dict" "$work/cmudict.dict"
    export DV_HOME=$work
    if [ -f "$work/cmudict.dict" ]; then export DV_CMUDICT=$work/cmudict.dict; else unset DV_CMUDICT; fi
}
# `recipe_snapshot`: with $work, $out, the array `recipes` and a `stamp` function set, each recipe's
# progress in one line, and its logs (progress lines dropped: a training log of \r-separated lines
# reached 19 MB) and metrics in $out/snapshot.tgz (a call returns at most 8 files of at most
# 16 MiB each). benchmarks/newspeaker/{gpu,hibari_gpu}.sh.
recipe_snapshot() {
    local keep=$work/snapshot r o m
    rm -rf "$keep" && mkdir -p "$keep"
    for r in "${recipes[@]}"; do
        o=$work/recipes/$r
        [ -d "$o" ] || continue
        mkdir -p "$keep/$r"
        tr '\r' '\n' < "$work/$r.log" | grep -av ' ETA ' | tail -300 > "$keep/$r/recipe.log" 2>/dev/null
        for m in "$o"/runs/*/*/metrics.jsonl; do
            [ -f "$m" ] && cp "$m" "$keep/$r/$(basename "$(dirname "$(dirname "$m")")").metrics.jsonl"
        done
        stamp "$r: $(grep -aE '^\[[0-9]+/10\]' "$work/$r.log" | tail -1); $(tail -c 300 "$o"/logs/train-wavenet.log 2>/dev/null | tr '\r' '\n' | grep step | tail -1)"
    done
    tar czf "$out/snapshot.tgz" -C "$keep" .
}
