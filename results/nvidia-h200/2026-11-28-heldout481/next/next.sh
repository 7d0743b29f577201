#!/usr/bin/env bash
# Registered next run (../README.md, "Registered next run"): the conditional rescale in CuPy's and
# Triton's loops, branch hyp/next-s68 (main + hyp/cupy-lazy-rescale + hyp/triton-lazy-rescale)
# against main's code (their merge base). No wheels. On one GPU about 15 minutes (start 540, then
# wait calls); a second GPU, if lent, takes the Triton lane. From the repository root, on the branch:
#   bash scripts/gpu_ab.sh old $(git merge-base main hyp/next-s68)
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-heldout481/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     # until it prints 'next done'
# 1. correctness at the branch: the conformance suite on CuPy and Triton, and the rising scores
#    test (tests/test_rising_scores.py) on every backend the machine has
# 2. lanes, both orders:
#    cupy    heldout:530 (no run has drawn it), CuPy's one-pass and split-K
#    triton  wide.json: the first 12 problems of seeds 531-559 at q_len 8 whose Triton program is
#            128 rows on two warpgroups (wide_pick.py); then heldout:531 at q_len 1
set -u
cd "$(dirname "$0")/.."
CONFORMANCE="cupy:240 triton:150" W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1
cat "$W/conf.log"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_rising_scores.py > "$W/rising.log" 2>&1
tail -3 "$W/rising.log"
gpus=$(nvidia-smi -L | wc -l)
lane() {  # gpu name runs
  ( export CUDA_VISIBLE_DEVICES=$1 ORDERS=2
    RUNS="$3" W=$W/ab/$2 bash scripts/gpu_ab.sh run ) > "$W/lane-$2.log" 2>&1
}
CUPY="h530|240|--workloads heldout:530 --backends cupy"
TRITON="wide|200|--workload-file gpu-session/wide.json --backends triton;
        h531|200|--workloads heldout:531 --backends triton"
if [ "$gpus" -ge 2 ]; then
  lane 0 cupy "$CUPY" & lane 1 triton "$TRITON" & wait
else
  lane 0 cupy "$CUPY"; lane 0 triton "$TRITON"
fi
for name in cupy/h530 triton/wide triton/h531; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/${name%/*}/compare-${name#*/}.txt" 2>/dev/null \
    || echo "$name: no comparison"
done
echo "next done"
