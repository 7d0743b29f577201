#!/usr/bin/env bash
# Registered next run, part 2 (next.sh says when): heldout:441, a seed no run has drawn, every
# backend and vendor kernel over 4 GPUs (Ray), at main, cold L2, no tuning cache.
set -u
cd "$(dirname "$0")/.."
RUNS="h441|1000|--workloads heldout:441 --gpus 2" W=$W bash scripts/gpu_pipeline.sh > "$W/h441-pipeline.log" 2>&1
cat "$W/h441-pipeline.log"
python3 scripts/vendor_ratios.py --below 0.9 "$W/h441" 2>&1 | head -40
echo "h441 done"
