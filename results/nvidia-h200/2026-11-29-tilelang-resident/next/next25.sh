#!/usr/bin/env bash
# Registered run (../README.md): TileLang's split-K items sized by its compiled kernel's residency
# (branch hyp/tilelang-resident: main at 3f19c2d's impls and tests with next/branch.patch applied,
# `git apply results/nvidia-h200/2026-11-29-tilelang-resident/next/branch.patch`) against main's
# fixed one block an SM. One GPU, TileLang's wheels
# (TARGET=/tmp/site-tilelang), about 25 minutes (each run a process: the residency build,
# about 8 s a kernel, is paid again in each new-code run). From the repository root:
#   bash SHARED/gpu/wheels.sh tilelang     (SHARED: the shared folder beside this repository)
#   calls back to back, each carrying its folder: `OUT=$OUT bash scripts/device_run.sh copy
#   .gpu-wheels/I` for each folder but the last, then `TARGET=/tmp/site-tilelang OUT=$OUT bash
#   scripts/device_run.sh install .gpu-wheels/N`
#   git checkout -b hyp/tilelang-resident && git apply <that patch> && git commit -am hyp
#   bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-tilelang-resident/next/* gpu-session/
#   bash scripts/light_tree.sh on
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next25.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (again until it prints 'next25 done')
# 1. the A/Bs, both orders, TileLang's split-K: tsw (heldout:481's six token-gather problems,
#    seen), tsu (12 unseen problems of seeds 4300-4303: 8 token gathers, 4 dense TMA controls)
# 2. TileLang's split-K conformance on the branch
set -u
cd "$(dirname "$0")/.."
ORDERS=2 RUNS="tsw|300|--workload-file gpu-session/tsw.json --backends tilelang --variants split-k;
               tsu|400|--workload-file gpu-session/tsu.json --backends tilelang --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for lane in tsw tsu; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null | cut -c1-150 \
    || echo "$lane: no comparison"
done
CONFORMANCE="tilelang:400" PROPS="split-k" W=$W/conformance bash scripts/gpu_pipeline.sh > "$W/conformance.log" 2>&1
tail -n 3 "$W/conformance.log"
for lane in tsw tsu; do sed -n '/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null | sed "s/^/$lane: /"; done
echo "next25 done"
