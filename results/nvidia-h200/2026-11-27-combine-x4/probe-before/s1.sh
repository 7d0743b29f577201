#!/usr/bin/env bash
# Session 60, call 1: the registered A/B of H1-H3 (hyp.sh's four lanes), then probes of the
# latency-bound b1 32k few-KV-head cells (forced split counts; ncu) and of heldout 104.22 (ncu).
set -u
cd "$(dirname "$0")/.."
bash gpu-session/hyp.sh
probe() {  # GPU, name, problem file, splits...
  local gpu=$1 name=$2 prob=$3; shift 3
  for n in "$@"; do
    CUDA_VISIBLE_DEVICES=$gpu timeout 120 python3 -m harness run --problem "$(cat "$prob")" \
      --backends triton,gluon,cupy,torch-cudnn --variants split-k,dense ${n:+--num-splits $n} \
      --timing cold --no-tuning-cache --out "$W/probe-$name-s${n:-rule}" > "$W/probe-$name-s${n:-rule}.log" 2>&1
    echo "probe $name splits ${n:-rule} rc $?"
  done
}
ncu_cells() {  # GPU, cells...
  local gpu=$1; shift
  CUDA_VISIBLE_DEVICES=$gpu NCU="$*" W=$W/ncu bash scripts/gpu_pipeline.sh > "$W/ncu-$gpu.log" 2>&1
}
probe 0 tp8 gpu-session/llama3-70b-tp8.json "" 64 256 512 &
probe 1 qwen15 gpu-session/qwen2.5-1.5b.json "" 64 256 512 &
ncu_cells 2 triton/split-k:llama3-70b-tp8:1:32768:dense torch-cudnn/dense:llama3-70b-tp8:1:32768:dense gluon/split-k:llama3-70b-tp8:1:32768:dense &
ncu_cells 3 cupy/split-k:llama3-70b-tp8:1:32768:dense triton/split-k:heldout:104:22 gluon/split-k:heldout:104:22 &
wait
for f in "$W"/probe-*/rows.jsonl; do
  python3 -c "
import json
for l in open('$f'):
    r=json.loads(l)
    if r.get('status')=='PASS': print('$f'.split('/')[-2], r['impl'], r.get('median_us'), r.get('config_summary'))
" 2>&1 | head -8
done
grep -h "Duration\|Grid Size\|Registers Per\|Achieved Occupancy\|Memory Throughput" "$W"/ncu/ncu-*.txt | head -60
echo "s1 done"
