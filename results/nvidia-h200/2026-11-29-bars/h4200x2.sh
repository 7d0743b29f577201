#!/usr/bin/env bash
# Registered run (README.md here): issue 32's bars on heldout:4200, a seed no run has drawn, every
# backend and vendor kernel over 2 GPUs (Ray), at main, cold L2, no tuning cache. About 17 minutes
# on two H200s (`kind` nvidia-h200-x2), with the wheels of scripts/device_run.sh: the vendor
# pieces (wheels.sh fa3 fa4 flashinfer), Ray's and TileLang's (TARGET=/tmp/site-tilelang) and
# Helion's, each folder copied in a call of its own and installed by the last. Then:
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-bars/h4200x2.sh gpu-session/
#   bash scripts/light_tree.sh on
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/h4200x2.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (again until it prints 'h4200 done')
set -u
cd "$(dirname "$0")/.."
RUNS="h4200|1000|--workloads heldout:4200 --gpus 2" W=$W bash scripts/gpu_pipeline.sh > "$W/h4200-pipeline.log" 2>&1
cat "$W/h4200-pipeline.log"
python3 scripts/vendor_ratios.py --below 0.9 "$W/h4200" 2>&1 | head -60
echo "h4200 done"
