#!/usr/bin/env bash
# Registered next run (../README.md, "Next"), on a 4-GPU machine with the vendor wheels, Ray and
# TileLang installed (scripts/device_run.sh copy/install; ../../2026-11-27-triton-combine-rows
# names the wheel folders). From the repository root:
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-27-resident-grid/next/next.sh gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next.sh 540
# Predictions: Triton's and Gluon's worst on heldout:114 leave 114.19 (0.84x, 0.82x) for cells at
# 0.87-0.90x; their medians stay >= 1.05x; no other backend's row moves beyond the noise.
set -u
cd "$(dirname "$0")/.."
RUNS="held114|${HELD_S:-420}|--workloads heldout:114 --gpus 4" W=$W bash scripts/gpu_pipeline.sh > "$W/held-lane.log" 2>&1
[ -f "$W/held114/rows.jsonl" ] && python3 scripts/vendor_ratios.py --below 0.9 "$W/held114" > "$W/held114-ratios.txt" 2>&1
# the two rows the rule made slower on seeds 131-160 under ncu (Triton's old tile by config; Gluon's
# old TMA path is not reachable by a config where the rule drops it: its old time is in ../ab-refined)
( export CUDA_VISIBLE_DEVICES=0
  NCU="triton/dense:heldout:131:10 triton/dense:heldout:131:10:{\"block_n\":64} gluon/dense:heldout:149:14" \
    W=$W/ncu bash scripts/gpu_pipeline.sh ) > "$W/ncu.log" 2>&1
head -12 "$W/held114-ratios.txt" 2>/dev/null
echo "next done"
