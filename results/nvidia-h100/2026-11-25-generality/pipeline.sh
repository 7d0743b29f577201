#!/usr/bin/env bash
# Issue 32's judging run on one GPU (started by scripts/device_run.sh start THIS; $W: its folder).
# Runs are split by backend group, each under its own time limit (SIGINT: the run writes its
# tables, marked incomplete), so a slow compiler costs its own rows, not the others'; ratios
# against the vendors over the folders together: scripts/vendor_ratios.py.
#   1. conformance of the split-K kernels whose plan now reads the built kernel's residency
#   2. held-out shapes of seed 2 (no rule or tuner saw them), every backend, rules only
#   3. models (--quick: bf16, both layouts), every backend, rules only
#   4. --tune on models (quick) for Triton, Gluon, CuPy (the steepest-descent search), writing
#      the tuning cache; then models again with that cache
#   5. ncu of Numba's and Triton's split kernels on one model shape
set -u
cd "$(dirname "$0")/../../.."
export DECODE_BENCH_TUNING_CACHE="$W/tuning.json"
VENDORS=flash_attn3,flash_attn4,flashinfer,torch-cudnn,torch-fa2
FAST=triton,gluon,cupy
run() {  # name, seconds, harness options
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  timeout -s INT "$limit" python3 -m harness run "$@" --timing cold --out "$W/$name" > "$W/$name.log" 2>&1
  echo "$name rc $? in $((SECONDS - start)) s"; tail -2 "$W/$name.log"
}
DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=5 timeout 60 python3 -m pytest conformance -q \
  -p no:cacheprovider -k "split and (cupy or numba)" -W ignore::DeprecationWarning \
  > "$W/conformance.log" 2>&1; echo "conformance rc $?"; tail -1 "$W/conformance.log"
run heldout2 300 --workloads heldout:2 --backends $FAST,$VENDORS --no-tuning-cache
run heldout2-numba 120 --workloads heldout:2 --backends numba --no-tuning-cache
run heldout2-tile 130 --workloads heldout:2 --backends tilelang,helion --no-tuning-cache
run models 300 --workloads models --quick --backends $FAST,$VENDORS --no-tuning-cache
run models-numba 80 --workloads models --quick --backends numba --no-tuning-cache
run models-tile 100 --workloads models --quick --backends tilelang,helion --no-tuning-cache
run models-tune 150 --workloads models --quick --backends $FAST --tune
run models-cache 90 --workloads models --quick --backends $FAST
P='{"name": "qwen2.5-7b", "num_q_heads": 28, "num_kv_heads": 4, "head_dim": 128, "seq_lens": [4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096], "layout": "paged", "page_size": 16}'
for b in numba triton; do
  timeout 50 ncu --kernel-name regex:"decode_kernel|split_kernel" --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats \
    python3 -m harness run --backends $b --variants split-k --problem "$P" --no-timing \
    --out "$W/ncu-$b-run" > "$W/ncu-$b.txt" 2>&1; echo "ncu $b rc $?"
done
echo "pipeline done"
