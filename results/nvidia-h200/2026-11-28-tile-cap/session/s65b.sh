#!/usr/bin/env bash
# Session 65, call b (2 GPUs): A/B of 56bfccf (no K/V tile wider than the longest attended span,
# Triton and Gluon) against 595fe0e on the 23 problems of seeds 405-424 whose tile the cap
# changes (chosen on the CPU, never timed), one-pass variants, both orders, a lane a GPU.
# Prediction (written before the run): the capped tile faster on >= 2/3 of the rows by >= 3 %,
# none slower by more than 3 %.
set -u
cd "$(dirname "$0")/.."
LANE_S=80 ORDERS=2 W=$W/ab bash scripts/gpu_ab.sh lanes "--backends helion --variants dense,paged" \
  gpu-session/cap_a.json gpu-session/cap_b.json > "$W/ab.log" 2>&1
cat "$W/ab.log"
echo "s65b done"
