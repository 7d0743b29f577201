#!/usr/bin/env bash
# Session 64, call b: Numba's GPU conformance at bf86c2e (the reduce-scatter score sums) on GPU 0;
# Nsight Compute on Numba cells, old (c745d6a, ab-old/) and new, with the compute sections
# (what bounds its loop: issue, pipes, stalls, occupancy) on GPUs 1-3.
set -u
cd "$(dirname "$0")/.."
here=$(pwd)
old=$(mktemp -d)
cp -r impls specs harness scripts conformance pyproject.toml "$old"/
(cd ab-old && find . -type f ! -name '.*' -exec cp --parents {} "$old"/ \;)
( export CUDA_VISIBLE_DEVICES=0; CONFORMANCE="numba:420" W=$W/conf bash scripts/gpu_pipeline.sh ) > "$W/lane-conf.log" 2>&1 &
SECTIONS=SpeedOfLight,ComputeWorkloadAnalysis,InstructionStats,WarpStateStats,Occupancy,LaunchStats,SchedulerStats,MemoryWorkloadAnalysis
prof() {  # gpu seed index variant
  local problem
  problem=$(python3 -c "import json; from specs import workloads as w
print(json.dumps(w.heldout_problems($2)[$3].to_dict()))")
  export CUDA_VISIBLE_DEVICES=$1
  for tree in new old; do
    dir=$here; [ $tree = old ] && dir=$old
    (cd "$dir" && timeout 200 python3 -m harness profile "numba/$4" --problem "$problem" --ncu --calls 1 \
      --sections $SECTIONS) > "$W/ncu-$tree-numba-$4-$2.$3.txt" 2>&1
    echo "ncu $tree $2.$3 $4 rc $?"
  done
}
( prof 1 401 19 split-k; prof 1 401 6 split-k ) > "$W/lane-ncu1.log" 2>&1 &
( prof 2 401 5 split-k; prof 2 401 1 split-k ) > "$W/lane-ncu2.log" 2>&1 &
( prof 3 114 11 paged; prof 3 401 17 split-k ) > "$W/lane-ncu3.log" 2>&1 &
wait
cat "$W"/lane-ncu*.log; tail -3 "$W/conf/conformance-numba.log"; cat "$W/lane-conf.log"
for f in "$W"/ncu-*.txt; do echo "== $(basename "$f")"
  grep -E "^\s+(Duration|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Executed Ipc Active|Achieved Occupancy|Registers Per Thread|No Eligible)" "$f" | head -9 | tr -s ' '
done
echo "s64b done"
