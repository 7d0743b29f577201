#!/usr/bin/env bash
# The committed comparison at the final kernels: the Gluon conformance suite (gpu profile),
# Gluon beside Triton on grid and ragged with empty JIT caches (the first call is the
# compilation), and Nsight Compute on the split-K kernels of the cells where they differ most.
# On the device machine: OUT=<folder> bash results/nvidia-h100/2026-11-23-gluon/run-final.sh
set -uo pipefail
OUT=${OUT:-runs/gluon-final}
D=results/nvidia-h100/2026-11-23-gluon
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  ncu --version | tail -1; } > "$OUT/env.txt" 2>&1
DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=${EXAMPLES:-10} timeout ${CONF_S:-170} \
  python3 -m pytest conformance -q -p no:cacheprovider -k gluon -W ignore::DeprecationWarning \
  > "$OUT/conformance.log" 2>&1; echo "conformance exit $?"
timeout ${RUN_S:-300} python3 -m harness run --backends gluon,triton --workloads grid,ragged \
  --timing cold --fresh-caches --out "$OUT/run" > "$OUT/harness.log" 2>&1; echo "harness exit $?"
for cell in "paged 1 8192" "dense 1 1024"; do
  for backend in gluon triton; do
    timeout 60 ncu -k regex:split_kernel --launch-skip 2 --launch-count 1 --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis python3 $D/ncu_cell.py $backend $cell
  done
done > "$OUT/ncu.txt" 2>&1; echo "ncu exit $?"
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/conformance.log" | tail -8
grep -E "llama3-8b|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Stall Long|Block Limit (Shared|Reg)" "$OUT/ncu.txt" | head -60
sed -n '/== side by side ==/,$p' "$OUT/harness.log" | cut -c1-150
