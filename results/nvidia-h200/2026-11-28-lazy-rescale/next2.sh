#!/usr/bin/env bash
# next.sh's A/B lanes again after its machine was lost mid-run (session 68): the first pairs that
# came back (cupy h530, triton wide) get their second pair (ORDERS=back); triton h531, of which
# only the old run came back, runs both orders. Conformance and the rising test had finished.
set -u
cd "$(dirname "$0")/.."
lane() {  # gpu name orders runs
  ( export CUDA_VISIBLE_DEVICES=$1 ORDERS=$3
    RUNS="$4" W=$W/ab/$2 bash scripts/gpu_ab.sh run ) > "$W/lane-$2.log" 2>&1
}
( lane 0 cupy back "h530|240|--workloads heldout:530 --backends cupy"
  lane 0 triton-wide back "wide|200|--workload-file gpu-session/wide.json --backends triton" ) &
lane 1 triton-h531 2 "h531|200|--workloads heldout:531 --backends triton" &
wait
sed -n '/^implementation/,/^summary/p' "$W/ab/triton-h531/compare-h531.txt" 2>/dev/null || echo "h531: no comparison"
echo "next2 done"
