#!/usr/bin/env bash
# Registered A/B (../README.md, "Registered: CuPy's split floor, second form"): branch
# hyp/cupy-floor2 against main's code (their merge base), both orders, CuPy split-K only, no
# wheels, about 4 minutes on one GPU. From the repository root, on branch hyp/cupy-floor2:
#   bash scripts/gpu_ab.sh old $(git merge-base main hyp/cupy-floor2)
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-heldout481/floor2/*.json results/nvidia-h200/2026-11-28-heldout481/floor2/floor2.sh gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/floor2.sh 540
# Runs: floor2  floor2.json, the first 12 problems of seeds 490-504 whose plan the floor changes
#               (../floor/floor_pick.py on the branch): the prediction's
#       seen    seen.json, the problems of seeds 482-489 this form changes (11 of them timed in
#               ../floor; 489.14 not): reported apart
set -u
cd "$(dirname "$0")/.."
RUNS="floor2|90|--workload-file gpu-session/floor2.json --backends cupy --variants split-k;
      seen|90|--workload-file gpu-session/seen.json --backends cupy --variants split-k" \
  ORDERS=2 W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for name in floor2 seen; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$name.txt" 2>/dev/null || echo "$name: no comparison"
done
echo "floor2 done"
