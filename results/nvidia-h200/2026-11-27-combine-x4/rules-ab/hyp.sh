#!/usr/bin/env bash
# The A/B of branch hyp/rules-from-tuning-104's three rules (registered in ../README.md, "Next"),
# one lane a GPU, old (main, in ab-old/) then new (the branch's tree) on the same GPU. Before:
#   git checkout hyp/rules-from-tuning-104 && bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-27-sharers-tune-x4/next/* gpu-session/
# then on a 4-GPU machine (no vendor wheels needed):
#   OUT=$OUT bash scripts/device_run.sh start gpu-session/hyp.sh 540
set -u
cd "$(dirname "$0")/.."
[ -d "${DECODE_BENCH_ENV_TILELANG:-/nonexistent}" ] || unset DECODE_BENCH_ENV_TILELANG
lane() {  # GPU, name, seconds a side, options
  ( export CUDA_VISIBLE_DEVICES=$1
    RUNS="$2|$3|$4" W=$W/$2 bash scripts/gpu_ab.sh run ) > "$W/lane-$2.log" 2>&1 &
}
lane 0 h1 200 "--workload-file gpu-session/h1.json --backends cupy"
lane 1 h2 200 "--workload-file gpu-session/h2.json --backends gluon --variants dense"
lane 2 h3 200 "--workload-file gpu-session/h3.json --backends triton --variants split-k"
lane 3 grid 200 "--workloads grid --quick --backends gluon --variants dense"
wait
tail -n 2 "$W"/lane-*.log
echo "hyp done"
