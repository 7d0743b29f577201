#!/usr/bin/env bash
# Where the remaining gaps come from: (1) the ragged batches timed cold, as CUDA-graph replays
# and for host launch overhead, Gluon beside Triton; (2) Nsight Compute on every kernel of the
# 16-sequence ragged dense split-K call (split + combine) of both; (3) shared-memory bank
# conflicts of Gluon's one-pass kernel at 64 x 8k dense, 16 KB slots, TMA against cp.async.
# On the device machine:
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash results/nvidia-h100/2026-11-24-gluon-tma/run-diagnose.sh
set -uo pipefail
OUT=${OUT:-runs/gluon-tma-diagnose}
D=results/nvidia-h100/2026-11-24-gluon-tma
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.
timeout 150 python3 -m harness run --backends gluon,triton --variants split-k --workloads ragged \
  --timing cold,graph,launch --out "$OUT/ragged-modes" > "$OUT/ragged-modes.log" 2>&1
echo "ragged modes exit $?"
for backend in gluon triton; do
  timeout 60 ncu -k regex:"split_kernel|combine_kernel" --launch-skip 4 --launch-count 2 \
    --section SpeedOfLight python3 $D/ncu_cell.py $backend split-k dense ragged16 0
done > "$OUT/ncu-ragged-kernels.txt" 2>&1; echo "ncu kernels exit $?"
for tma in 1 0; do
  timeout 60 ncu -k regex:decode_kernel --launch-skip 2 --launch-count 1 --metrics \
    l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__inst_executed_op_ldsm.sum,smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,gpu__time_duration.sum \
    python3 $D/ncu_cell.py gluon dense dense 64 8192 "{\"DENSE_TMA\": $tma, \"BLOCK_N\": 32}"
done > "$OUT/ncu-smem.txt" 2>&1; echo "ncu smem exit $?"
grep -E "llama3|split_kernel|combine_kernel|Duration" "$OUT/ncu-ragged-kernels.txt" | cut -c1-140
grep -E "llama3|bank|ldsm|stalled|duration" "$OUT/ncu-smem.txt" | cut -c1-140
sed -n '/== side by side ==/,$p' "$OUT/ragged-modes.log" | cut -c1-150
grep -E "ragged" "$OUT/ragged-modes/results.md" | cut -c1-220 | head -12
