#!/usr/bin/env bash
# Session 62: impls.plan.resident_grid (Triton and Gluon one-pass share SMs where a near-uniform
# grid's last wave would run part-empty), old 182707f against the working tree, both orders, on
# the 22 problems of seeds 115-130 whose config it changes, and heldout114.19; 4 lanes.
set -u
cd "$(dirname "$0")/.."
for i in 0 1 2 3; do
  ( export CUDA_VISIBLE_DEVICES=$i ORDERS=2
    RUNS="rg$i|110|--workload-file gpu-session/rg$i.json --backends triton,gluon --variants dense,paged" \
      W=$W/rg$i bash scripts/gpu_ab.sh run ) > "$W/lane-rg$i.log" 2>&1 &
done
wait
for i in 0 1 2 3; do grep -E "faster|slower|summary|drift|Drift" "$W/rg$i/compare-rg$i.txt" | grep -v "^slower/faster"; done
echo "rg done"
