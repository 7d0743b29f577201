#!/usr/bin/env bash
# Registered run (../README.md): Numba's fp16 conversion by the hardware (cvt.f32.f16, branch
# hyp/numba-cvt) against main, then Numba's conformance suite on the branch. One GPU, no vendor
# wheel, about 20 minutes: `start`, then `wait` until it prints
# 'next12 done'. From the repository root:
#   git checkout hyp/numba-cvt && bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-numba-cvt/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next12.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (again until it prints 'next12 done')
# 1. the A/B, both orders, Numba's split-K variant on ncv.json: 8 fp16 drafts of unseen seeds
#    2080-2159 and 4 bf16 drafts of 2160-2239 (controls: their kernels' code is main's)
# 2. Numba's conformance suite on the branch (the fp16 conversion): cut by its budget if the
#    session's device time runs short
set -u
cd "$(dirname "$0")/.."
ORDERS=2 RUNS="ncv|300|--workload-file gpu-session/ncv.json --backends numba --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
sed -n '/^implementation/,/^summary/p' "$W/ab/compare-ncv.txt" 2>/dev/null || echo "ncv: no comparison"
CONFORMANCE="numba:600" W=$W/conformance-numba bash scripts/gpu_pipeline.sh > "$W/conformance-numba.log" 2>&1
tail -n 3 "$W/conformance-numba.log"
sed -n '/^summary/p' "$W/ab/compare-ncv.txt" 2>/dev/null
echo "next12 done"
