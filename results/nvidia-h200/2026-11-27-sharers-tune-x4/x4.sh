#!/usr/bin/env bash
# Session 59 on a 4-GPU host. Lane A (GPU 0): the pre-registered A/B of the sharing rules (old
# c0dcc1f against this tree) on heldout:106 and five seed-104 cells, then ncu of 105.5 at the
# rule's 128-token tile and at sharing's 32. Lane B (GPUs 1-3): --tune Triton, Gluon, CuPy on
# heldout:104 into $W/tuning.json. Then on all 4: the seed from the cache with every backend
# and vendor, and Triton/Gluon/CuPy on the rules with every vendor.
set -u
cd "$(dirname "$0")/.."
export DECODE_BENCH_TUNING_CACHE=$W/tuning.json
D=triton,gluon,cupy
V=flash_attn3,flash_attn4,flashinfer,torch-cudnn,torch-fa2
( export CUDA_VISIBLE_DEVICES=0
  RUNS="h106|600|--workloads heldout:106 --backends triton,cupy,flash_attn3; h104s|300|--workload-file gpu-session/h104s.json --backends triton,cupy,flash_attn3" \
    W=$W/ab bash scripts/gpu_ab.sh run
  P=$(cat gpu-session/h105_5.json)
  for bn in 128 32; do
    timeout 200 python3 -m harness profile triton/one-pass --problem "$P" --config "{\"BLOCK_N\": $bn}" --ncu \
      > "$W/ab/ncu-h105.5-triton-bn$bn.txt" 2>&1; echo "ncu bn$bn rc $?"
  done; echo "lane A done" ) > "$W/laneA.log" 2>&1 &
( export CUDA_VISIBLE_DEVICES=1,2,3
  RUNS="tune104|${TUNE_S:-840}|--workloads heldout:104 --backends $D --tune --timing cold --gpus 3" \
    W=$W/t bash scripts/gpu_pipeline.sh; echo "lane B done" ) > "$W/laneB.log" 2>&1 &
wait
tail -3 "$W/laneA.log" "$W/laneB.log"
RUNS="cache104|${CACHE_S:-400}|--workloads heldout:104 --timing cold --gpus 4; rule104|${RULE_S:-300}|--workloads heldout:104 --backends $D,$V --gpus 4" \
  W=$W/c bash scripts/gpu_pipeline.sh
echo "x4 done"
