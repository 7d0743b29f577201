#!/usr/bin/env bash
# Registered next run (../README.md, section 3), on a 4-GPU machine; no vendor wheels needed.
# From the repository root:
#   mkdir -p gpu-session && cp results/nvidia-h100/2026-11-28-short-bytes/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next.sh 480
# 1. Triton on one 256-wide tile (head dims 208-256): the 10 problems of seeds 252-400 whose
#    one-pass tile the bytes rule (c8f74f9) narrows, chosen on the CPU (../session/changed.py, old
#    e8aa51c): the rule's tile against the 64-token tile it had before, by config, in both orders.
#    Prediction: the 64-token tile is faster on at least 6 of the 10 (seeds 201-251: 4 of 6
#    slower there); if so, Triton's bytes test stops at tiles of 128 dims.
# 2. CuPy on 114.18 (0.84x of FA3 on H100s): its chunk floor of one loop step cuts 2 sequences
#    into 19 items where the other DSLs' plan makes 5; 5 splits forced against the plan's.
set -u
cd "$(dirname "$0")/.."
t256() {  # gpu file
  local f="--workload-file gpu-session/$2.json --backends triton --variants dense,paged"
  ( export CUDA_VISIBLE_DEVICES=$1
    RUNS="rule|90|$f; tile64|90|$f --config {\"block_n\":64}; tile64b|90|$f --config {\"block_n\":64}; ruleb|90|$f" \
      W=$W/$2 bash scripts/gpu_pipeline.sh ) > "$W/lane-$2.log" 2>&1
}
t256 0 t256a &
t256 1 t256b &
( export CUDA_VISIBLE_DEVICES=2
  f="--workload-file gpu-session/h114_18.json --backends cupy,triton --variants split-k"
  RUNS="plan|60|$f; five|60|$f --num-splits 5; plan2|60|$f" W=$W/c114_18 bash scripts/gpu_pipeline.sh ) > "$W/lane-c114_18.log" 2>&1 &
wait
for d in t256a t256b c114_18; do
  for run in "$W"/$d/*/; do echo "== $run"; grep -E "^\| heldout" "$run/results.md" | grep -E "PASS" | cut -c1-150; done
done
echo "next done"
