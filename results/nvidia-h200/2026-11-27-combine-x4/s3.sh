#!/usr/bin/env bash
# Session 60, call 3: (A) CuPy's combine with warps sharing a row: its GPU tests and conformance
# on GPU 0; A/B of d0a3583 against c555c6c on GPUs 1-3 (old then new on the same GPU). (B) every
# backend and vendor kernel on heldout:112 (a seed no rule or tuner saw), then models --quick with
# what time is left (HELD_S, MODELS_S).
set -u
cd "$(dirname "$0")/.."
lane() {  # GPU, name, seconds a side, options
  ( export CUDA_VISIBLE_DEVICES=$1
    RUNS="$2|$3|$4" W=$W/$2 bash scripts/gpu_ab.sh run ) > "$W/lane-$2.log" 2>&1 &
}
( export CUDA_VISIBLE_DEVICES=0
  DECODE_BENCH_PROFILE=gpu timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_split_merges.py -k cupy \
    > "$W/gpu-tests-cupy.log" 2>&1; echo "cupy merge tests rc $?: $(tail -1 "$W/gpu-tests-cupy.log")"
  CONFORMANCE="cupy:120" EXAMPLES=4 PROPS="split" W=$W/conf bash scripts/gpu_pipeline.sh ) > "$W/lane-tests.log" 2>&1 &
lane 1 models 130 "--workloads models --quick --backends cupy,torch-cudnn --variants split-k,dense"
lane 2 sched 130 "--workloads sched,spec-decode --backends cupy --variants split-k"
lane 3 held 130 "--workloads heldout:104,heldout:105 --backends cupy --variants split-k"
wait
tail -n 2 "$W"/lane-*.log
RUNS="held112|${HELD_S:-360}|--workloads heldout:112 --gpus 4; models|${MODELS_S:-240}|--workloads models --quick --gpus 4" \
  W=$W bash scripts/gpu_pipeline.sh
for r in held112 models; do [ -f "$W/$r/rows.jsonl" ] && python3 scripts/vendor_ratios.py "$W/$r" 2>&1 | head -8; done
echo "s3 done"
