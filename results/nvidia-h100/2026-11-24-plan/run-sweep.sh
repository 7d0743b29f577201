#!/usr/bin/env bash
# Triton's launch configurations on the paged cells where the pipelined kernel still trails its
# dense twin or the code before it (sweep.json: batch 1 at 1k-32k, 16 x 4k, 64/128 x 1k,
# 128 x 4k, the 8-sequence and the one-long-among-63 ragged batches; dense twins too), each
# config a harness run (cold L2); then Nsight Compute on the 1 x 8k split kernel, dense against
# paged; then the planner's host cost again. On the device machine (no vendor wheels needed):
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash results/nvidia-h100/2026-11-24-plan/run-sweep.sh
set -uo pipefail
HERE=results/nvidia-h100/2026-11-24-plan
FINAL=${OUT:-runs/plan-sweep}
OUT=$(mktemp -d)
mkdir -p "$FINAL"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
i=0
for cfg in '{}' '{"num_warps": 8}' '{"num_stages": 4}' '{"num_stages": 2}' '{"BLOCK_N": 64}' \
           '{"BLOCK_N": 64, "num_stages": 4}' '{"BLOCK_N": 64, "num_warps": 8, "num_stages": 4}'; do
  echo "config $cfg" >> "$OUT/configs.txt"
  timeout 80 python3 -m harness run --backends triton --workload-file $HERE/sweep.json --timing cold \
    --config "$cfg" --out "$OUT/c$i" > "$OUT/c$i.log" 2>&1; echo "c$i $cfg exit $?"
  i=$((i + 1))
done
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,lts__t_sectors_op_read.sum,smsp__inst_executed.sum,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
for lay in dense paged; do
  timeout 60 ncu --metrics $M -k regex:split_kernel -c 1 python3 scripts/run_one.py triton/split-k 1 8192 $lay \
    > "$OUT/ncu-1x8k-$lay.txt" 2>&1; echo "ncu $lay exit $?"
done
timeout 60 python3 scripts/plan_probe.py > "$OUT/plan-probe-2.txt" 2>&1
python3 - "$OUT" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
cfgs = open(f"{out}/configs.txt").read().split("\n")
rows = {}
for i in range(7):
    f = f"{out}/c{i}/results.json"
    if not os.path.exists(f): continue
    for r in json.load(open(f))["rows"]:
        if r["status"] == "PASS":
            rows.setdefault((r["problem"].replace("llama3-8b ", "")[:34], r["variant"]), {})[i] = r["median_us"]
print("cell | " + " | ".join(f"c{i}" for i in range(7)))
for k, v in rows.items():
    print(f"{k[0]:34s} {k[1]:8s} " + " ".join(f"{v.get(i, float('nan')):8.1f}" for i in range(7)))
PY
grep -hE "split_kernel|duration|dram__throughput|issue_active|long_scoreboard|registers" "$OUT"/ncu-*.txt | head -30
tar czf "$FINAL/sweep.tgz" -C "$OUT" . && echo "archive: $(du -h "$FINAL/sweep.tgz" | cut -f1)"
