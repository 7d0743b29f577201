#!/usr/bin/env bash
# Session 64, call a: the registered next run (next.sh: Triton's 256-wide tiles, CuPy 114.18) on
# GPUs 0-2, and the Numba A/B (old c745d6a, new: the reduce-scatter score sums) on seed 401's
# problems on GPU 3 (n401a) and on GPU 2 after the CuPy probe (n401b), both orders.
set -u
cd "$(dirname "$0")/.."
t256() {  # gpu file
  local f="--workload-file gpu-session/$2.json --backends triton --variants dense,paged"
  ( export CUDA_VISIBLE_DEVICES=$1
    RUNS="rule|90|$f; tile64|90|$f --config {\"block_n\":64}; tile64b|90|$f --config {\"block_n\":64}; ruleb|90|$f" \
      W=$W/$2 bash scripts/gpu_pipeline.sh ) > "$W/lane-$2.log" 2>&1
}
numba_ab() {  # gpu file
  ( export CUDA_VISIBLE_DEVICES=$1
    RUNS="$2|110|--workload-file gpu-session/$2.json --backends numba" ORDERS=2 W=$W/$2 \
      bash scripts/gpu_ab.sh run ) > "$W/lane-$2.log" 2>&1
}
t256 0 t256a &
t256 1 t256b &
( ( export CUDA_VISIBLE_DEVICES=2
  f="--workload-file gpu-session/h114_18.json --backends cupy,triton --variants split-k"
  RUNS="plan|60|$f; five|60|$f --num-splits 5; plan2|60|$f" W=$W/c114_18 bash scripts/gpu_pipeline.sh ) > "$W/lane-c114_18.log" 2>&1
  numba_ab 2 n401b ) &
numba_ab 3 n401a &
wait
for d in t256a t256b c114_18; do
  for run in "$W"/$d/*/; do echo "== $run"; grep -E "^\| heldout" "$run/results.md" | grep -E "PASS" | cut -c1-150; done
done
for n in n401a n401b; do echo "== $n"; grep -E "^summary" "$W/$n/compare-$n.txt"; done
echo "s64a done"
