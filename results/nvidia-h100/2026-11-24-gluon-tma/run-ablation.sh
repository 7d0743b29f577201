#!/usr/bin/env bash
# What TMA buys: Gluon's dense and split-k on grid and ragged with DENSE_TMA=0 (every dense tile
# by the cp.async ring, the planner sizing items for it), and Nsight Compute on the one-pass
# kernel at 64 x 8k dense, 16 KB slots (BLOCK_N 32), TMA against cp.async. On the device machine:
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash results/nvidia-h100/2026-11-24-gluon-tma/run-ablation.sh
set -uo pipefail
OUT=${OUT:-runs/gluon-tma-ablation}
D=results/nvidia-h100/2026-11-24-gluon-tma
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.
timeout ${RUN_S:-240} python3 -m harness run --backends gluon --variants dense,split-k \
  --workloads grid,ragged --timing cold --config '{"DENSE_TMA": 0}' --out "$OUT/cpasync" \
  > "$OUT/cpasync.log" 2>&1; echo "cp.async run exit $?"
for tma in 1 0; do
  timeout 90 ncu -k regex:decode_kernel --launch-skip 2 --launch-count 1 --section SpeedOfLight \
    --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis python3 $D/ncu_cell.py gluon dense dense 64 8192 \
    "{\"DENSE_TMA\": $tma, \"BLOCK_N\": 32}"
done > "$OUT/ncu.txt" 2>&1; echo "ncu exit $?"
grep -E "llama3-8b|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Stall|Block Limit (Shared|Reg)|Theoretical Occ" "$OUT/ncu.txt" | head -60
grep -E "dense" "$OUT/cpasync/results.md" | cut -c1-160 | head -60
