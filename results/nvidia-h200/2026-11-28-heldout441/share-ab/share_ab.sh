#!/usr/bin/env bash
# A/B of hyp/cupy-split-share (CuPy's split-K ring sized for the CTAs its plan gives an SM, where
# the rule's 4-warp ring would leave each alone on its SM) against main 0c59bf3, both orders, on
# share.json: the first 12 problems of seeds 442-445 whose split-K config it changes (chosen on
# the CPU, never timed). One GPU, split-K only (one-pass is unchanged).
set -u
cd "$(dirname "$0")/.."
ORDERS=2 RUNS="share|60|--workload-file gpu-session/share.json --backends cupy --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
grep -E "(faster|slower|same)$|^summary" "$W/ab/compare-share.txt" || tail -20 "$W/ab.log"
echo "share done"
