#!/usr/bin/env bash
# Registered next run (../README.md, "Registered next run"): CuPy's split-K shared ring always
# 2 warps x 2 stages (branch hyp/cupy-split-share2) against main, both orders, one GPU (no
# wheels needed), about 3 minutes. From the repository root, on branch hyp/cupy-split-share2:
#   bash scripts/gpu_ab.sh old $(git merge-base main hyp/cupy-split-share2)
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-heldout441/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next.sh 400
# Runs:
#   share2  the registered test: share2.json, the first 12 problems of seeds 462-475 whose split-K
#           config the rule changes (share_pick.py on the branch), none timed by any run
#   share   share.json again (seeds 442-445, timed at 2 x 3 in ../share-ab): whether 2 x 2 mends
#           the six rows 2 x 3 slowed; seen problems, reported apart from the prediction
set -u
cd "$(dirname "$0")/.."
ORDERS=2 RUNS="share2|90|--workload-file gpu-session/share2.json --backends cupy --variants split-k;
               share|90|--workload-file gpu-session/share.json --backends cupy --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for name in share2 share; do
  grep -E "(faster|slower|same)$|^summary" "$W/ab/compare-$name.txt" || echo "$name: no comparison"
done
echo "next done"
