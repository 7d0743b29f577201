#!/usr/bin/env bash
# The tail guard's registered test: c0dcc1f against this tree on the 15 problems of seeds 107-111
# whose Triton or CuPy configuration the sharing rules change, a quarter a GPU, old then new on
# the same GPU (scripts/gpu_ab.sh), Triton and CuPy.
set -u
cd "$(dirname "$0")/.."
[ -d "${DECODE_BENCH_ENV_TILELANG:-/nonexistent}" ] || unset DECODE_BENCH_ENV_TILELANG
for i in 0 1 2 3; do
  ( export CUDA_VISIBLE_DEVICES=$i
    RUNS="v$i|${SIDE_S:-150}|--workload-file gpu-session/val$i.json --backends triton,cupy" \
      W=$W/v$i bash scripts/gpu_ab.sh run ) > "$W/lane$i.log" 2>&1 &
done
wait
tail -n 2 "$W"/lane*.log
echo "val done"
