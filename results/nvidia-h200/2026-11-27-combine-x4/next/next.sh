#!/usr/bin/env bash
# The registered next runs (../README.md, "Next"), on a 4-GPU machine with the vendor wheels
# installed (scripts/device_run.sh copy/install phases). From the repository root:
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-27-combine-x4/next/next.sh gpu-session/
#   OUT=$OUT bash scripts/device_run.sh start gpu-session/next.sh 560   # then `wait` calls
# (1) every backend and vendor on heldout:112 and models --quick, all four GPUs; (2) ncu of the
# seed-112 worst cells; (3) Gluon one-pass on the grid, TMA rule against cp.async (tma 0); (4) the
# GPU tests of this session's combines not yet run on a GPU.
set -u
cd "$(dirname "$0")/.."
RUNS="held112|${HELD_S:-420}|--workloads heldout:112 --gpus 4; models|${MODELS_S:-420}|--workloads models --quick --gpus 4" \
  W=$W bash scripts/gpu_pipeline.sh
( export CUDA_VISIBLE_DEVICES=0
  NCU="triton/split-k:heldout:112:4 gluon/split-k:heldout:112:4 torch-cudnn/dense:heldout:112:4" \
    W=$W/ncu bash scripts/gpu_pipeline.sh ) > "$W/ncu-0.log" 2>&1 &
( export CUDA_VISIBLE_DEVICES=1
  NCU="cupy/dense:heldout:112:21 flash_attn4/dense:heldout:112:21 gluon/dense:heldout:112:21" \
    W=$W/ncu bash scripts/gpu_pipeline.sh ) > "$W/ncu-1.log" 2>&1 &
( export CUDA_VISIBLE_DEVICES=2
  RUNS="grid-rule|200|--workloads grid --backends gluon --variants dense; grid-tma0|200|--workloads grid --backends gluon --variants dense --config {\"tma\":0}" \
    W=$W bash scripts/gpu_pipeline.sh ) > "$W/grid-lane.log" 2>&1 &
( export CUDA_VISIBLE_DEVICES=3
  DECODE_BENCH_PROFILE=gpu timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_split_merges.py \
    -k "sharing_a_row or cut_along" ) > "$W/gpu-tests.log" 2>&1 &
wait
tail -n 3 "$W/gpu-tests.log"
for r in held112 models; do [ -d "$W/$r" ] && python3 scripts/vendor_ratios.py --below 0.9 "$W/$r" 2>&1 | head -30; done
python3 -m harness compare "$W/grid-tma0" "$W/grid-rule" 2>&1 | tail -25
echo "next done"
