#!/usr/bin/env bash
# Session 62: the refined rule (Triton: the head dim in one tile), validation on seeds 131-160
# (old 182707f against the working tree, both orders, on the first 24 problems of seeds 131-160
# whose config it changes; 4 lanes)
set -u
cd "$(dirname "$0")/.."
for i in 0 1 2 3; do
  ( export CUDA_VISIBLE_DEVICES=$i ORDERS=2
    RUNS="rv$i|100|--workload-file gpu-session/rv$i.json --backends triton,gluon --variants dense,paged" \
      W=$W/rv$i bash scripts/gpu_ab.sh run ) > "$W/lane-rv$i.log" 2>&1 &
done
wait
for i in 0 1 2 3; do grep -E "faster|slower|summary|drift|Drift" "$W/rv$i/compare-rv$i.txt" | grep -v "^slower/faster"; done
echo "rv done"
