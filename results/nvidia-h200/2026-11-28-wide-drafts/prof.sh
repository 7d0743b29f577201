#!/usr/bin/env bash
# Issue 34's wide drafts on an H200: Triton and FA3 on next/wide.json (12 drafts of 128-row
# programs, seeds 531-535 at q_len 8), then Nsight Compute on the two where Triton is furthest
# behind, both kernels. FA3's wheels installed first.
set -u
cd "$(dirname "$0")/.."
RUNS="wide|200|--workload-file gpu-session/wide.json --backends triton,flash_attn3" \
  W=$W bash scripts/gpu_pipeline.sh
python3 gpu-session/pick_prof.py "$W/wide" 2 > "$W/pick.txt" 2> "$W/ratios.txt"
cat "$W/ratios.txt"
n=0
while IFS=$'\t' read -r impl prob label; do
  n=$((n + 1))
  timeout 150 python3 -m harness profile "$impl" --problem "$prob" --ncu --calls 1 \
    --sections SpeedOfLight,Occupancy,LaunchStats,WarpStateStats,ComputeWorkloadAnalysis,SchedulerStats,MemoryWorkloadAnalysis \
    > "$W/ncu-$n-${impl//\//-}.txt" 2>&1
  echo "ncu $n $impl $label rc $?"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Registers Per|Achieved Occupancy|No Eligible" "$W/ncu-$n-${impl//\//-}.txt" | head -12
done < "$W/pick.txt"
echo "prof done"
