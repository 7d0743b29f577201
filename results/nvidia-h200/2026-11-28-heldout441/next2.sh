#!/usr/bin/env bash
# next.sh on a 2-GPU machine (the only kinds lent at session 66's start): the same four lanes,
# problems, limits and prediction, two lanes a GPU one after the other (GPU 0: t144 then cupy_a;
# GPU 1: tl then cupy_b).
set -u
cd "$(dirname "$0")/.."
lane() {  # gpu name seconds options
  ( export CUDA_VISIBLE_DEVICES=$1 ORDERS=2
    RUNS="$2|$3|$4" W=$W/ab/$2 bash scripts/gpu_ab.sh run ) > "$W/lane-$2.log" 2>&1
}
{ lane 0 t144 180 "--workload-file gpu-session/t144.json --backends triton"
  lane 0 cupy_a 150 "--workload-file gpu-session/cupy_a.json --backends cupy"; } &
{ lane 1 tl 200 "--workload-file gpu-session/tl.json --backends tilelang --variants dense,paged"
  lane 1 cupy_b 150 "--workload-file gpu-session/cupy_b.json --backends cupy"; } &
wait
for name in t144 tl cupy_a cupy_b; do
  grep -E "(faster|slower|same)$|^summary" "$W/ab/$name/compare-$name.txt" 2>/dev/null \
    || { echo "$name: no comparison"; tail -3 "$W/lane-$name.log"; }
done > "$W/ab.log"
cat "$W/ab.log"
echo "next done"
