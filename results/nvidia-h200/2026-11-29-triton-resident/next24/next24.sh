#!/usr/bin/env bash
# Registered run (../README.md, "Registered (session 78): the ring at 128 dims"): Triton's paged
# split-K ring narrowed at 128 dims too (branch hyp/triton-resident-128) against main, where it
# narrows past 128 dims only. One GPU, no wheel, about 11 minutes. From the repository root:
#   git checkout hyp/triton-resident-128 && bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-triton-resident/next24/* gpu-session/
#   bash scripts/light_tree.sh on
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next24.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (if it has not printed 'next24 done')
# The A/B, both orders, Triton's split-K: lg (the Llama-3-8B grid's 18 paged problems, seen),
# t128 (10 unseen paged problems of seeds 4000-4005 whose rule ring is 128 tokens x 3 stages of
# a 128-dim tile)
set -u
cd "$(dirname "$0")/.."
ORDERS=2 RUNS="lg|200|--workload-file gpu-session/lg.json --backends triton --variants split-k;
               t128|200|--workload-file gpu-session/t128.json --backends triton --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for lane in lg t128; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null | cut -c1-150 \
    || echo "$lane: no comparison"
done
grep -hE "rc |PASS|FAIL" "$W/ab.log" | sort | uniq -c
for lane in lg t128; do sed -n '/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null | sed "s/^/$lane: /"; done
echo "next24 done"
