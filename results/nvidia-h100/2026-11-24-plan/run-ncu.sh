#!/usr/bin/env bash
# Nsight Compute on the Triton cells this issue left slower than before or below a vendor kernel:
# 64 x 1k paged one-pass, now and before the change (.old/ = `git archive e983c78`); the split
# kernel on the 8-sequence ragged batch and on the 64-sequence batch with one 32k sequence (paged),
# where Triton is at 0.99x the fastest vendor kernel. On the device machine (no vendor wheels):
#     OUT=<folder> bash results/nvidia-h100/2026-11-24-plan/run-ncu.sh
set -uo pipefail
HERE=$PWD/results/nvidia-h100/2026-11-24-plan
OUT=${OUT:-runs/plan-ncu}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__registers_per_thread,smsp__inst_executed.sum,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,launch__grid_size
prof() {  # label, root, kernel regex, implementation, problem index
  (cd "$2" && PYTHONPATH=. timeout 90 ncu --metrics $M -k "regex:$3" --launch-skip 2 --launch-count 1 \
     python3 "$HERE/ncu_cell.py" "$4" "$HERE/sweep.json" "$5") > "$OUT/ncu-$1.txt" 2>&1
  echo "$1 exit $?"
}
prof 64x1k-paged-now . decode_kernel triton/paged 9
prof 64x1k-paged-before .old decode_kernel triton/paged 9
prof ragged8-paged-split . split_kernel triton/split-k 17
prof ragged64-32k-paged-split . split_kernel triton/split-k 15
prof ragged64-32k-dense-split . split_kernel triton/split-k 14
for f in "$OUT"/ncu-*.txt; do echo "== $(basename "$f")"; grep -E "^  [a-z_]+ |duration|dram__|warps_active|occupancy|registers|inst_executed|long_scoreboard|grid_size" "$f"; done
