#!/usr/bin/env bash
# Registered next run (../README.md, "Registered next run"), on a 4-GPU machine with the vendor
# wheels, TileLang's (TARGET=/tmp/site-tilelang) and Ray's. From the repository root, on branch
# hyp/next-s66 (three hypotheses over main, each a commit: Triton's unspilled tiles, TileLang's
# and CuPy's widest_tile caps):
#   bash scripts/gpu_ab.sh old $(git merge-base main hyp/next-s66)
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-tile-cap/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next.sh 540
#   ... then `wait 540` calls until it prints 'next done' (about 10 minutes); then, with main
#   checked out (a device call copies the tree: not while this runs), h441.sh the same way
# 1. Three A/Bs against main at once, both orders, one GPU a lane, on problems no run has timed
#    with these backends (chosen on the CPU, README):
#    GPU 0  Triton halving a tile whose compiled kernel spills: t144.json, the 18 problems of
#           seeds 425-440 (all head dim 144) whose rule tile compiles to spill stores under ptxas
#           (probe-d144.log; 437.21's one-pass kernel does not spill: its one-pass rows are not
#           the prediction's).
#    GPU 1  TileLang's widest_tile cap: tl.json, the 13 problems of seeds 405-424 it changes
#           (one-pass only: its compiles take 10-12 s a shape).
#    GPU 2-3 CuPy's token slices capped by widest_tile: cupy_a/b.json, the 32 problems of seeds
#           405-424 it changes.
#    Prediction, each backend: faster on at least two thirds of the rows whose config changes by
#    >= 3 %, none slower by more than 3 %. Where it holds, that commit lands on main; where not,
#    it is dropped.
# 2. (h441.sh, at main) heldout:441 (never run), every backend and vendor kernel over the 4
#    GPUs: where issue 32's bars stand with the widest_tile cap.
set -u
cd "$(dirname "$0")/.."
lane() {  # gpu name seconds options
  ( export CUDA_VISIBLE_DEVICES=$1 ORDERS=2
    RUNS="$2|$3|$4" W=$W/ab/$2 bash scripts/gpu_ab.sh run ) > "$W/lane-$2.log" 2>&1
}
lane 0 t144 180 "--workload-file gpu-session/t144.json --backends triton" &
lane 1 tl 200 "--workload-file gpu-session/tl.json --backends tilelang --variants dense,paged" &
lane 2 cupy_a 150 "--workload-file gpu-session/cupy_a.json --backends cupy" &
lane 3 cupy_b 150 "--workload-file gpu-session/cupy_b.json --backends cupy" &
wait
for name in t144 tl cupy_a cupy_b; do
  grep -E "(faster|slower|same)$|^summary" "$W/ab/$name/compare-$name.txt" 2>/dev/null \
    || { echo "$name: no comparison"; tail -3 "$W/lane-$name.log"; }
done > "$W/ab.log"
cat "$W/ab.log"
echo "next done"
