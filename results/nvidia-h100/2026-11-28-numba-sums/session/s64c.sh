#!/usr/bin/env bash
# Session 64, call c: Numba's occupancy (ncu at s64b: one block of 8 warps an SM, 154-255
# registers, issue 43-60 %, no eligible warp 38-51 % of cycles). A sweep over launch configs
# on seed 401's 12 problems, split-k, each lane's configs against the default on its own GPU.
set -u
cd "$(dirname "$0")/.."
f="--workload-file gpu-session/n401.json --backends numba --variants split-k"
lane() {  # gpu "name|config ..."
  local gpu=$1; shift
  local runs="base|150|$f"
  for entry in "$@"; do runs="$runs; ${entry%%|*}|150|$f --config ${entry#*|}"; done
  ( export CUDA_VISIBLE_DEVICES=$gpu; RUNS="$runs" W=$W/g$gpu bash scripts/gpu_pipeline.sh ) > "$W/lane-g$gpu.log" 2>&1
}
lane 0 'w4|{"num_warps":4}' 'w4b3|{"num_warps":4,"min_blocks":3}' &
lane 1 'w4b3t32|{"num_warps":4,"min_blocks":3,"tpr":32,"unroll":2}' 'w4t32|{"num_warps":4,"tpr":32,"unroll":2}' &
lane 2 't32b2|{"tpr":32,"unroll":2,"min_blocks":2}' 'w4b4t32|{"num_warps":4,"min_blocks":4,"tpr":32,"unroll":2}' &
lane 3 't32|{"tpr":32,"unroll":2}' 'w2b6t32|{"num_warps":2,"min_blocks":6,"tpr":32,"unroll":2}' &
wait
cat "$W"/lane-g*.log
for g in 0 1 2 3; do
  for run in "$W"/g$g/*/; do
    echo "== g$g $(basename "$run")"
    grep -E "^\| heldout" "$run/results.md" | awk -F'|' '{print $2, $5}' | sed 's/ \[.*//' | cut -c1-90
  done
done
echo "s64c done"
