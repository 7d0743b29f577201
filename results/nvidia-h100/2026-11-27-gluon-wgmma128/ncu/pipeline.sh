#!/usr/bin/env bash
# Nsight Compute on the drafts where Gluon is furthest behind FA3 (seed 86, q_len 8, > 64 rows a
# KV head): 86.12 (dense, one-pass) and 86.13 (paged2, split-K); Gluon's rule (two 64-row
# programs a KV head), Gluon at 8 warps (one 128-row program) and FA3 on the same problem
set -u
unset DECODE_BENCH_ENV_TILELANG
p12=$(cat results/nvidia-h100/2026-11-27-gluon-wgmma128/ncu/p86_12.json); p13=$(cat results/nvidia-h100/2026-11-27-gluon-wgmma128/ncu/p86_13.json)
prof() {  # name impl problem [config]
  local start=$SECONDS
  timeout 150 python3 -m harness profile "$2" --problem "$3" ${4:+--config "$4"} --calls 1 --ncu > "$W/ncu-$1.txt" 2>&1
  echo "ncu $1 rc $? in $((SECONDS - start)) s"
}
prof 12-gluon-dense gluon/dense "$p12"
prof 12-fa3-dense flash_attn3/dense "$p12"
prof 12-gluon-dense-w8 gluon/dense "$p12" '{"num_warps":8}'
prof 13-gluon-splitk gluon/split-k "$p13"
prof 13-fa3-splitk flash_attn3/split-k "$p13"
for f in $W/ncu-*.txt; do
  echo "== $f"; grep -E "Context [0-9]|Duration|DRAM Throughput|Achieved Occupancy|Registers Per Thread|Block Size|Grid Size|Dynamic Shared Memory Per|Waves Per SM|L2 Hit Rate|Warp Cycles Per Issued" "$f" | cut -c1-110 | head -30
done
