#!/usr/bin/env bash
# Session 61, on 2 GPUs (no 4-GPU machine was lent): (A) Triton's combine as [rows, slots, dims]
# tiles, A/B 16aa0bd -> 62faa0a, Triton split-K, old then new on the same GPU, a lane a GPU; then
# ncu of Numba on two seed-112 problems (its ceiling). (B) every backend and vendor kernel on
# heldout:114 (a seed no rule, tuner or probe saw), both GPUs.
set -u
cd "$(dirname "$0")/.."
lane() {  # GPU, name, seconds a side, options
  ( export CUDA_VISIBLE_DEVICES=$1
    RUNS="$2|$3|$4" W=$W/$2 bash scripts/gpu_ab.sh run ) > "$W/lane-$2.log" 2>&1
}
( lane 0 models 100 "--workloads models --quick --backends triton --variants split-k"
  export CUDA_VISIBLE_DEVICES=0
  NCU="numba/split-k:heldout:112:4 numba/split-k:heldout:112:10" W=$W/ncu timeout 150 bash scripts/gpu_pipeline.sh \
    > "$W/ncu.log" 2>&1 ) &
lane 1 held 100 "--workloads heldout:112,heldout:104,spec-decode --backends triton --variants split-k" &
wait
tail -n 4 "$W"/models/compare-*.txt "$W"/held/compare-*.txt 2>/dev/null
RUNS="held114|${HELD_S:-600}|--workloads heldout:114 --gpus 2" W=$W bash scripts/gpu_pipeline.sh
[ -f "$W/held114/rows.jsonl" ] && python3 scripts/vendor_ratios.py --below 0.9 "$W/held114" 2>&1 | head -30
echo "final done"
