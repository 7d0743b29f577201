#!/usr/bin/env bash
# Registered run (../README.md): Helion's split-K items sized by its compiled kernel's residency
# (branch hyp/helion-resident) against main's fixed one program an SM. One GPU, Helion's wheels,
# about 15 minutes. From the repository root (wheels.sh: the shared folder's gpu/wheels.sh):
#   bash SHARED/gpu/wheels.sh helion      (writes .gpu-wheels/1)
#   git checkout hyp/helion-resident && bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-helion-resident/next/* gpu-session/
#   bash scripts/light_tree.sh on
#   OUT=$OUT bash scripts/device_run.sh install .gpu-wheels/1 && DECODE_BENCH_COMMIT=<HEAD> \
#     OUT=$OUT bash scripts/device_run.sh start gpu-session/next23.sh 480   (carry [".gpu-wheels/1"])
#   OUT=$OUT bash scripts/device_run.sh wait 540     (again until it prints 'next23 done')
# 1. the A/Bs, both orders, Helion's split-K: hrw (heldout:481's four worst Helion rows, seen),
#    hru (8 unseen problems of seeds 3900-3901 whose (sequence, KV head) pairs are under the SMs)
# 2. Helion's conformance suite on the branch
set -u
cd "$(dirname "$0")/.."
ORDERS=2 RUNS="hrw|200|--workload-file gpu-session/hrw.json --backends helion --variants split-k;
               hru|300|--workload-file gpu-session/hru.json --backends helion --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for lane in hrw hru; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null | cut -c1-150 \
    || echo "$lane: no comparison"
done
CONFORMANCE="helion:240" W=$W/conformance bash scripts/gpu_pipeline.sh > "$W/conformance.log" 2>&1
tail -n 3 "$W/conformance.log"
for lane in hrw hru; do sed -n '/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null | sed "s/^/$lane: /"; done
echo "next23 done"
