#!/usr/bin/env bash
# Triton's worst drafts against FA3 (q_len 8, head dims 192-256, 96-128 rows a KV head): the rule,
# then 128-row programs on two warpgroups (wgmma m64 each) at 32-token tiles, 3 and 2 stages, and
# 64-row ones at 32-token tiles
set -u
unset DECODE_BENCH_ENV_TILELANG
: "${DECODE_BENCH_COMMIT:?the commit measured (git rev-parse on the device reads a stale copy of .git)}"; export DECODE_BENCH_COMMIT
W=$OUT/w; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $W/env.txt
F="--workload-file results/nvidia-h100/2026-11-27-wide-rows/worst.json"
RUNS="rule|200|$F --backends triton,flash_attn3;
h128s3|120|$F --backends triton --config {\"block_h\":128,\"num_warps\":8,\"block_n\":32,\"num_stages\":3};
h128s2|120|$F --backends triton --config {\"block_h\":128,\"num_warps\":8,\"block_n\":32,\"num_stages\":2};
h64n32|120|$F --backends triton --config {\"block_h\":64,\"num_warps\":8,\"block_n\":32}" W=$W bash scripts/gpu_pipeline.sh
for r in rule h128s3 h128s2 h64n32; do echo "== $r"; grep -E "^\| *heldout|^heldout" $W/$r/results.md | cut -c1-150 | head -12; done

