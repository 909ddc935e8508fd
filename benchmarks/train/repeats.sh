#!/usr/bin/env bash
# Repeated 1-GPU (batch 32) vs 2-GPU (batch 64) runs of the paper-size segmentation model,
# unprofiled and profiled, to see the run-to-run spread of the scaling figure. On the device:
#   benchmarks/train/repeats.sh            (with .carry/dv, writes under $OUT)
set -u
out=$OUT; site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
mkdir -p $out/lib && ln -sf $site/nvidia/nccl/lib/libnccl.so.2 $out/lib/libnccl.so
export LD_LIBRARY_PATH="$out/lib:$site/torch/lib:$site/nvidia/cu13/lib:$site/nvidia/nccl/lib"
for rep in 1 2; do for prof in false true; do for g in 1 2; do
 b=$((32*g)); d=$out/r${rep}_p${prof}_g$g; mkdir -p $d
 sed -e 's|@SIZES@|preset = "paper"|' -e 's|@CLASSES@|1600|' -e 's|@LABELS@|40, 100|' -e "s|@BATCH@|$b|" -e 's|@STEPS@|50|' -e "s|@DIR@|$d|g" -e "s|@PROFILE@|$prof|" benchmarks/train/segmentation.toml.in > $d/run.toml
 timeout 100 .carry/dv train --config $d/run.toml --gpus $g > /dev/null 2> $d/stderr.txt
 python3 -c "
import json,sys
rows=[json.loads(l) for l in open('$d/metrics.jsonl')]; rows=[r for r in rows if r['step']>20]
sps=sum(r['samples_per_s'] for r in rows)/len(rows); print('rep $rep profile $prof gpus $g: %.1f samples/s, %.1f ms/step' % (sps, $b*1000/sps))"
 tail -1 $d/stderr.txt | grep -o '\[.*\]'
done; done; done
rm -rf $out/lib; find $out -name '*.safetensors' -delete; cd $out && tar czf all.tgz --exclude=all.tgz r*
