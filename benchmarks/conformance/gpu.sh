#!/usr/bin/env bash
# The conformance suite on the GPU machine (benchmarks/conformance.md): runs the carried test
# binaries (benchmarks/conformance/pack.sh builds them here) with only the conformance tests,
# every line printed (--nocapture), one log per crate and a summary in $OUT. No build on the device.
#   run(command="bash benchmarks/conformance/gpu.sh", carry=[".carry/conformance"])
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/conformance-out}
bin=$(mktemp -d)
mkdir -p "$out"
# The device's torch wheel: libtorch for the dv-fused binary, NVRTC (cu13) for all three.
site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
export LD_LIBRARY_PATH="$site/torch/lib:$site/nvidia/cu13/lib:${LD_LIBRARY_PATH:-}"
{
    date -u +%FT%TZ
    echo "built at $(cat "$here/.carry/conformance/REV" 2>/dev/null || echo unknown)"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
} | tee "$out/summary.txt"
status=0
for name in gpu align fused; do
    xz -dc "$here/.carry/conformance/$name.xz" > "$bin/$name" && chmod +x "$bin/$name" || {
        echo "$name: cannot unpack" | tee -a "$out/summary.txt"; status=1; continue; }
    start=$(date +%s%N)
    # Test threads 1: the CUDA backends share one device; lines stay in case order.
    timeout "$([ $name = gpu ] && echo 170 || echo 60)" "$bin/$name" conformance:: --nocapture --test-threads 1 > "$out/$name.log" 2>&1
    rc=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    [ $rc -eq 0 ] || status=1
    {
        echo "== $name: exit $rc in ${ms} ms"
        # The real backends' refusals, skips and failures (the perturbed backends must fail: their
        # test passes when they do), and every CUDA line.
        grep -v '(perturbed)' "$out/$name.log" | grep -E '^conformance .*(skipped|FAIL|not applicable|cuda)|^test |^test result|panicked'
        echo "   $(grep -c '^conformance ' "$out/$name.log") lines"
    } | tee -a "$out/summary.txt"
done
rm -rf "$bin"
exit $status
