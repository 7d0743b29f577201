#!/usr/bin/env bash
# A check after next23 landed (../README.md, "A check on the Llama grid"): Helion's split-K at
# main (the residency-sized plan) against main before the merge (9a55081), one order, on four of
# the Llama-3-8B grid's paged problems whose plan the change grows. One GPU, Helion's wheels:
#   bash SHARED/gpu/wheels.sh helion && bash scripts/gpu_ab.sh old 9a55081
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-helion-resident/check-llama/* gpu-session/
#   bash scripts/light_tree.sh on
#   OUT=$OUT bash scripts/device_run.sh install .gpu-wheels/1 && DECODE_BENCH_COMMIT=<HEAD> \
#     OUT=$OUT bash scripts/device_run.sh start gpu-session/hl.sh 320   (carry [".gpu-wheels/1"])
set -u
cd "$(dirname "$0")/.."
RUNS="hl|150|--workload-file gpu-session/hl.json --backends helion --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
sed -n '/^implementation/,/^summary/p' "$W/ab/compare-hl.txt" 2>/dev/null | cut -c1-150 || echo "no comparison"
grep -hE "rc |PASS|FAIL" "$W/ab.log" | sort | uniq -c
echo "hl done"
