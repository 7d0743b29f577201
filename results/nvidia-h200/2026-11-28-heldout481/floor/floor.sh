#!/usr/bin/env bash
# Registered A/B (../README.md, "Registered: CuPy's split floor"): branch hyp/cupy-floor against
# main's code (their merge base), both orders, CuPy split-K only, no wheels, about 4 minutes on one GPU;
# then two ncu profiles (about 2 minutes).
# From the repository root, on branch hyp/cupy-floor:
#   bash scripts/gpu_ab.sh old $(git merge-base main hyp/cupy-floor)
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-heldout481/floor/*.json results/nvidia-h200/2026-11-28-heldout481/floor/floor.sh gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/floor.sh 540
# Runs: floor  floor.json, the first 12 problems of seeds 482-489 whose plan the floor changes
#              (floor_pick.py on the branch): the prediction's
#       seen   seen.json, 481.15 and 481.23 (timed in ../h481 at main's floor): reported apart
set -u
cd "$(dirname "$0")/.."
RUNS="floor|90|--workload-file gpu-session/floor.json --backends cupy --variants split-k;
      seen|60|--workload-file gpu-session/seen.json --backends cupy --variants split-k" \
  ORDERS=2 W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for name in floor seen; do
  cat "$W/ab/compare-$name.txt" 2>/dev/null | sed -n '/^implementation/,$p' || echo "$name: no comparison"
done
# then (not part of the prediction) what bounds CuPy's CTA on 481.23 beside Triton's: ncu's
# instruction and scheduler sections on the split kernels (Triton's plan is main's)
NCU="cupy/split-k:heldout:481:23 triton/split-k:heldout:481:23" \
  NCU_SECTIONS=SpeedOfLight,Occupancy,LaunchStats,InstructionStats,SchedulerStats,WarpStateStats \
  W=$W/ncu bash scripts/gpu_pipeline.sh > "$W/ncu.log" 2>&1
cat "$W/ncu.log"
echo "floor done"
