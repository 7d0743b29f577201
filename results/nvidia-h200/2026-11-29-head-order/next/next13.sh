#!/usr/bin/env bash
# Registered run (../README.md, "TileLang and Helion: registered before their run"): TileLang's
# and Helion's one-pass grids in one_pass_grid's order (branch hyp/head-order-tl) against main.
# One GPU, TileLang's wheels (TARGET=/tmp/site-tilelang) and Helion's, about 20 minutes. From the
# repository root, both wheel sets built before the first call (a machine goes back 30 s after
# one; wheels.sh always writes .gpu-wheels/1..n):
#   (wheels.sh: the shared folder's gpu/wheels.sh, beside this repository)
#   bash SHARED/gpu/wheels.sh helion && mv .gpu-wheels .gpu-wheels-helion
#   echo /.gpu-wheels-helion/ >> .git/info/exclude && bash SHARED/gpu/wheels.sh tilelang
#   then calls back to back, each carrying its folder: `OUT=$OUT bash scripts/device_run.sh copy
#   .gpu-wheels/I` for each of TileLang's folders but the last, `TARGET=/tmp/site-tilelang
#   OUT=$OUT bash scripts/device_run.sh install .gpu-wheels/N`, then `OUT=$OUT bash
#   scripts/device_run.sh install .gpu-wheels-helion/1` (carry [".gpu-wheels-helion"])
#   git checkout hyp/head-order-tl && bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-head-order/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next13.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (again until it prints 'next13 done')
# 1. the A/Bs, both orders, one-pass variants only: htl (TileLang, seeds 2240-2319), hhl (Helion,
#    seeds 2320-2399), 8 drafts each (their compiles take 10-20 s a shape)
# 2. TileLang's and Helion's conformance suites on the branch
set -u
cd "$(dirname "$0")/.."
ONE="--variants dense,paged"
ORDERS=2 RUNS="htl|300|--workload-file gpu-session/htl.json --backends tilelang $ONE;
               hhl|300|--workload-file gpu-session/hhl.json --backends helion $ONE" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for lane in htl hhl; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null || echo "$lane: no comparison"
done
CONFORMANCE="tilelang:240 helion:240" W=$W/conformance bash scripts/gpu_pipeline.sh > "$W/conformance.log" 2>&1
tail -n 4 "$W/conformance.log"
for lane in htl hhl; do sed -n '/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null | sed "s/^/$lane: /"; done
echo "next13 done"
