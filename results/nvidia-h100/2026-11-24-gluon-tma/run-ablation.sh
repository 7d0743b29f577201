#!/usr/bin/env bash
# What TMA buys: Gluon's dense and split-k on grid and ragged with DENSE_TMA=0 (every dense tile
# by the cp.async ring, the planner sizing items for it), and Nsight Compute on the one-pass
# kernel at 64 x 8k dense, 16 KB slots (BLOCK_N 32), TMA against cp.async, and on the split kernels
# of Gluon and Triton on the 16-sequence ragged dense batch. On the device machine:
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
# the 16-sequence ragged dense batch: the same plan, Gluon's TMA split kernel against Triton's
for backend in gluon triton; do
  timeout 60 ncu -k regex:split_kernel --launch-skip 2 --launch-count 1 --section SpeedOfLight \
    --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis python3 $D/ncu_cell.py $backend split-k dense ragged16 0
done > "$OUT/ncu-ragged.txt" 2>&1; echo "ncu ragged exit $?"
for f in ncu ncu-ragged; do
  grep -E "llama3-8b|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Block Limit (Shared|Reg)" \
    "$OUT/$f.txt" | head -30
done
grep -E "dense" "$OUT/cpasync/results.md" | cut -c1-160 | head -60
