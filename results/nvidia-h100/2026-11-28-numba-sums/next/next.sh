#!/usr/bin/env bash
# Registered next run (../README.md, section 3), on a 4-GPU machine with the vendor wheels.
# From the repository root, on branch hyp/numba-lazy-rescale (one commit over main, which holds
# this folder):
#   bash scripts/gpu_ab.sh old $(git merge-base main hyp/numba-lazy-rescale)
#   mkdir -p gpu-session && cp results/nvidia-h100/2026-11-28-numba-sums/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next.sh 540
#   ... then `wait 540` calls until it prints 'next done' (about 20 minutes in all)
# 1. Numba skipping the accumulator's rescale where a head's max did not move: A/B against
#    main on all 24 problems of seed 404 (never run before), every Numba variant, both orders,
#    one GPU a lane. Prediction: faster on at least two thirds of the rows at GQA >= 6, by >= 3 %,
#    none slower by more than 2 %. If so, the branch lands on main.
# 2. The cells heldout:403 did not reach (403.14, .15, .17, .23), every backend and vendor kernel.
# 3. Numba's GPU conformance in full (cut at 80 % by 420 s at bf86c2e).
set -u
cd "$(dirname "$0")/.."
LANE_S=150 ORDERS=2 W=$W/ab bash scripts/gpu_ab.sh lanes "--backends numba" \
  gpu-session/n404a.json gpu-session/n404b.json gpu-session/n404c.json gpu-session/n404d.json \
  > "$W/ab.log" 2>&1
RUNS="h403_rest|240|--workload-file gpu-session/h403_rest.json --gpus 4" W=$W bash scripts/gpu_pipeline.sh > "$W/rest.log" 2>&1
CONFORMANCE="numba:600" W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1  # after the timed runs
cat "$W/ab.log" "$W/rest.log" "$W/conf.log"
echo "next done"
