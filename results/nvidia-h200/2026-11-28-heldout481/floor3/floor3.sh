#!/usr/bin/env bash
# Registered A/B (../README.md, "Registered: CuPy's split floor, third form"): branch
# hyp/cupy-floor3 against main's code (their merge base), both orders, CuPy split-K only, no
# wheels, about 4 minutes on one GPU. From the repository root, on branch hyp/cupy-floor3:
#   bash scripts/gpu_ab.sh old $(git merge-base main hyp/cupy-floor3)
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-heldout481/floor3/*.json results/nvidia-h200/2026-11-28-heldout481/floor3/floor3.sh gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/floor3.sh 540
# Runs: floor3  floor3.json, the first 12 problems of seeds 505-529 whose plan the floor changes
#               (../floor/floor_pick.py on the branch): the prediction's
set -u
cd "$(dirname "$0")/.."
RUNS="floor3|90|--workload-file gpu-session/floor3.json --backends cupy --variants split-k" \
  ORDERS=2 W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for name in floor3; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$name.txt" 2>/dev/null || echo "$name: no comparison"
done
echo "floor3 done"
