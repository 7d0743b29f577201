#!/usr/bin/env bash
# Session 61, 2 GPUs: (A) Triton's combine rows-first only on tiles of >= 4 rows (b3a...), A/B
# 16aa0bd -> HEAD, Triton split-K, old then new on the same GPU; (B) every backend and vendor
# kernel on heldout:114 (a seed no rule, tuner or probe saw), both GPUs through Ray.
set -u
cd "$(dirname "$0")/.."
lane() {  # GPU, name, seconds a side, options
  ( export CUDA_VISIBLE_DEVICES=$1
    RUNS="$2|$3|$4" W=$W/$2 bash scripts/gpu_ab.sh run ) > "$W/lane-$2.log" 2>&1
}
lane 0 models 75 "--workloads models --quick --backends triton --variants split-k" &
lane 1 held 75 "--workloads heldout:112,heldout:104 --backends triton --variants split-k" &
wait
tail -n 3 "$W"/models/compare-*.txt "$W"/held/compare-*.txt 2>/dev/null
RUNS="held114|${HELD_S:-520}|--workloads heldout:114 --gpus 2" W=$W bash scripts/gpu_pipeline.sh
[ -f "$W/held114/rows.jsonl" ] && python3 scripts/vendor_ratios.py --below 0.9 "$W/held114" 2>&1 | head -30
echo "final done"
