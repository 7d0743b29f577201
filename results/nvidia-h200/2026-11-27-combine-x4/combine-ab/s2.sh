#!/usr/bin/env bash
# Session 60, call 2: A/B of c555c6c (the combine cuts the head dim) against 40c58c6, Triton and
# Gluon split-K (and cuDNN, the noise floor, on models), one lane a GPU, old then new on the same
# GPU; then the b1xs32768 probe of forced split counts and ncu of the new combine.
set -u
cd "$(dirname "$0")/.."
[ -d "${DECODE_BENCH_ENV_TILELANG:-/nonexistent}" ] || unset DECODE_BENCH_ENV_TILELANG
lane() {  # GPU, name, seconds a side, options
  ( export CUDA_VISIBLE_DEVICES=$1
    RUNS="$2|$3|$4" W=$W/$2 bash scripts/gpu_ab.sh run ) > "$W/lane-$2.log" 2>&1 &
}
lane 0 models 200 "--workloads models --quick --backends triton,gluon,torch-cudnn --variants split-k,dense"
lane 1 held 200 "--workloads heldout:104,heldout:105 --backends triton,gluon --variants split-k"
lane 2 grid 200 "--workloads grid,long --backends triton,gluon --variants split-k"
lane 3 sched 200 "--workloads sched,spec-decode --backends triton,gluon --variants split-k"
wait
tail -n 2 "$W"/lane-*.log
probe() {  # GPU, name, problem file, splits...
  local gpu=$1 name=$2 prob=$3; shift 3
  for n in "$@"; do
    CUDA_VISIBLE_DEVICES=$gpu timeout 120 python3 -m harness run --problem "$(cat "$prob")" \
      --backends triton,gluon,torch-cudnn --variants split-k,dense ${n:+--num-splits $n} \
      --timing cold --no-tuning-cache --out "$W/probe-$name-s${n:-rule}" > "$W/probe-$name-s${n:-rule}.log" 2>&1
    echo "probe $name splits ${n:-rule} rc $?"
  done
}
probe 0 tp8 gpu-session/llama3-70b-tp8.json "" 64 32 &
probe 1 qwen15 gpu-session/qwen2.5-1.5b.json "" 32 &
CUDA_VISIBLE_DEVICES=2 NCU="triton/split-k:llama3-70b-tp8:1:32768:dense gluon/split-k:llama3-70b-tp8:1:32768:dense" \
  W=$W/ncu bash scripts/gpu_pipeline.sh > "$W/ncu-2.log" 2>&1 &
wait
for f in "$W"/probe-*/rows.jsonl; do
  python3 -c "
import json
for l in open('$f'):
    r=json.loads(l)
    if r.get('status')=='PASS' and 'triton/dense' not in r['impl'] and 'gluon/dense' not in r['impl']: print('$f'.split('/')[-2], r['impl'], r.get('median_us'), r.get('config_summary'))
" 2>&1 | head -8
done
grep -h -E "^  [a-z_]+_kernel|Duration" "$W"/ncu/ncu-*.txt | head -24
echo "s2 done"
