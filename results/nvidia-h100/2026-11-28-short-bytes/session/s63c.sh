#!/usr/bin/env bash
# Session 63, call C: validation of b7dad66 (one-pass grids of programs under 256 KB share their
# SMs) on the first 24 problems of seeds 161-200 whose config it changes, chosen on the CPU before
# this run (+ 114.6, the case that prompted it, lane 3); old e8aa51c, both orders, 4 lanes.
set -u
cd "$(dirname "$0")/.."
for i in 0 1 2 3; do
  ( export CUDA_VISIBLE_DEVICES=$i ORDERS=2
    RUNS="sb$i|110|--workload-file gpu-session/sb$i.json --backends triton,cupy --variants dense,paged" \
      W=$W/sb$i bash scripts/gpu_ab.sh run ) > "$W/lane-sb$i.log" 2>&1 &
done
wait
for i in 0 1 2 3; do grep -E "faster|slower|summary|drift|Drift" "$W/sb$i/compare-sb$i.txt" | grep -v "^slower/faster"; done
echo "sb done"
