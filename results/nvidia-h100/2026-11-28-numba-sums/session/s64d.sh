#!/usr/bin/env bash
# Session 64, call d: every backend and vendor kernel on heldout:403 (a seed no rule or tuning
# saw), four GPUs, at bf86c2e (the short-programs bytes rule and Numba's reduce-scatter sums in).
set -u
cd "$(dirname "$0")/.."
RUNS="held403|${HELD_S:-380}|--workloads heldout:403 --gpus 4" W=$W bash scripts/gpu_pipeline.sh > "$W/held-lane.log" 2>&1
[ -f "$W/held403/rows.jsonl" ] && python3 scripts/vendor_ratios.py --below 0.9 "$W/held403" > "$W/held403-ratios.txt" 2>&1
cat "$W/held-lane.log"; head -14 "$W/held403-ratios.txt"
echo "s64d done"
