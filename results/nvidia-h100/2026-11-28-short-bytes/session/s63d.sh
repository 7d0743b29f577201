#!/usr/bin/env bash
# Session 63, call D: validation of the refined rule (near-uniform one-pass grids of programs under 256 KB share their
# SMs) on the first 24 problems of seeds 201-300 whose config it changes, chosen on the CPU before
# this run; old e8aa51c, both orders, 4 lanes.
set -u
cd "$(dirname "$0")/.."
for i in 0 1 2 3; do
  ( export CUDA_VISIBLE_DEVICES=$i ORDERS=2
    RUNS="sv$i|110|--workload-file gpu-session/sv$i.json --backends triton,cupy --variants dense,paged" \
      W=$W/sv$i bash scripts/gpu_ab.sh run ) > "$W/lane-sv$i.log" 2>&1 &
done
wait
for i in 0 1 2 3; do grep -E "faster|slower|summary|drift|Drift" "$W/sv$i/compare-sv$i.txt" | grep -v "^slower/faster"; done
echo "sv done"
