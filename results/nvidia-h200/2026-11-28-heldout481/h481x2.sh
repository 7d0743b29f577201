#!/usr/bin/env bash
# Session 67: heldout:481, a seed no run has drawn, every
# backend and vendor kernel over 2 GPUs (Ray), at main, cold L2, no tuning cache.
set -u
cd "$(dirname "$0")/.."
RUNS="h481|1000|--workloads heldout:481 --gpus 2" W=$W bash scripts/gpu_pipeline.sh > "$W/h481-pipeline.log" 2>&1
cat "$W/h481-pipeline.log"
python3 scripts/vendor_ratios.py --below 0.9 "$W/h481" 2>&1 | head -40
echo "h481 done"
