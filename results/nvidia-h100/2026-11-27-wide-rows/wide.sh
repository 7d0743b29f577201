#!/usr/bin/env bash
# Triton's 128-row programs past 128 dims (this tree, NEW) against two 64-row ones (OLD: the
# commit before, exported to a folder, e.g. git archive 14566b0 -- . ':!results' | tar -x -C old)
# on the q_len-8 drafts of seeds 97, 81 and 83 the rule changes (unseen.json), FA3 beside.
# From the repository root: OLD_TREE=old bash results/nvidia-h100/2026-11-27-wide-rows/wide.sh
set -u
unset DECODE_BENCH_ENV_TILELANG
W=$OUT/w; mkdir -p $W; root=$PWD
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $W/env.txt
DECODE_BENCH_COMMIT=${NEW:?the commit measured} RUNS="newu|230|--workload-file results/nvidia-h100/2026-11-27-wide-rows/unseen.json --backends triton,flash_attn3" W=$W bash scripts/gpu_pipeline.sh
( cd "$OLD_TREE" && DECODE_BENCH_COMMIT=${OLD:?the commit before} RUNS="oldu|180|--workload-file $root/results/nvidia-h100/2026-11-27-wide-rows/unseen.json --backends triton" W=$W bash scripts/gpu_pipeline.sh )
PYTHONPATH=. python3 scripts/best_variant.py $W/oldu $W/newu triton > $W/best-triton.txt 2>&1; tail -4 $W/best-triton.txt
python3 results/nvidia-h100/2026-11-27-wide-rows/ratios.py $W/newu $W/oldu
