#!/usr/bin/env bash
# Registered next run (../README.md, "Registered next run"): CuPy's conditional rescale, branch
# hyp/cupy-lazy-rescale against main's code (their merge base). No wheels; about 10 minutes on one
# GPU (start 540, then a wait call). From the repository root, on branch hyp/cupy-lazy-rescale:
#   bash scripts/gpu_ab.sh old $(git merge-base main hyp/cupy-lazy-rescale)
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-heldout481/next/lazy.sh gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/lazy.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     # until it prints 'lazy done'
# 1. the conformance suite on CuPy at the branch (the kernel changed: correctness first)
# 2. heldout:530 (no run has drawn it), CuPy's one-pass and split-K, both orders
set -u
cd "$(dirname "$0")/.."
CONFORMANCE="cupy:300" W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1
cat "$W/conf.log"
RUNS="h530|240|--workloads heldout:530 --backends cupy" ORDERS=2 W=$W/ab bash scripts/gpu_ab.sh run \
  > "$W/ab.log" 2>&1
sed -n '/^implementation/,/^summary/p' "$W/ab/compare-h530.txt" 2>/dev/null || echo "h530: no comparison"
echo "lazy done"
