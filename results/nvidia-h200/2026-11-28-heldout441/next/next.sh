#!/usr/bin/env bash
# Registered next run (../README.md, "Registered next run"): two A/Bs against main, both orders,
# no wheels needed, about 8 minutes on one GPU (a second GPU, if lent, takes the Triton lane);
# then the layout read of heldout:441's large problems (about 2 minutes).
# From the repository root, on branch hyp/next-s67 (main + hyp/cupy-share2 + hyp/triton-split-share):
#   bash scripts/gpu_ab.sh old $(git merge-base main hyp/next-s67)
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-heldout441/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next.sh 540
#   ... and `wait` calls until it prints 'next done'
# Lanes:
#   cupy    share2.json: the first 12 problems of seeds 462-475 whose CuPy split-K ring changes
#           (share_pick.py on the branch); then share.json (seeds 442-445, timed at 2 x 3 in
#           ../share-ab: seen problems, reported apart from the prediction)
#   triton  tshare.json: the first 12 problems of seeds 462-466 whose Triton split-K tile changes
#           by the CPU's estimate (triton_share_pick.py; the launcher decides on the compiled
#           kernel, so count the rows whose reported BLOCK_N is 32)
set -u
cd "$(dirname "$0")/.."
gpus=$(nvidia-smi -L | wc -l)
lane() {  # gpu name runs
  ( export CUDA_VISIBLE_DEVICES=$1 ORDERS=2
    RUNS="$3" W=$W/ab/$2 bash scripts/gpu_ab.sh run ) > "$W/lane-$2.log" 2>&1
}
CUPY="share2|90|--workload-file gpu-session/share2.json --backends cupy --variants split-k;
      share|90|--workload-file gpu-session/share.json --backends cupy --variants split-k"
TRITON="tshare|150|--workload-file gpu-session/tshare.json --backends triton --variants split-k"
if [ "$gpus" -ge 2 ]; then
  lane 0 cupy "$CUPY" & lane 1 triton "$TRITON" & wait
else
  lane 0 cupy "$CUPY"; lane 0 triton "$TRITON"
fi
# 3. what the layout alone costs a pure read (scripts/layout_read.py, at main's code too): the
#    problems of heldout:441 of 100 MB of K/V or more (the 95 % bar's, and pages of 1 and 4)
python3 scripts/layout_read.py --workloads heldout:441 --min-kv-mb 100 --out "$W/layout441.json" \
  > "$W/layout441.log" 2>&1
cat "$W/layout441.log"
for name in cupy/share2 cupy/share triton/tshare; do
  grep -E "(faster|slower|same)$|^summary" "$W/ab/${name%/*}/compare-${name#*/}.txt" || echo "$name: no comparison"
done
echo "next done"
