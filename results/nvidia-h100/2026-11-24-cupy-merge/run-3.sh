#!/usr/bin/env bash
# Issue 15, the misses: CuPy's split-K at batch 1 with the planner's chunk against other cuts
# (1k in 128-token pieces, 4k in 384, 8k in 640, 16k in 1152: what a per-item cost of 256 tokens
# and a one-tile minimum would plan), beside cuDNN; then Nsight Compute (profiled range only,
# scripts/run_one.py) on 1 x 1k dense (CuPy's split kernel at 4 and 8 pieces, cuDNN), 16 x 4k dense
# one-pass (a bandwidth miss) and 16 x 1k paged and dense one-pass (a paged miss). No vendor wheels.
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash results/nvidia-h100/2026-11-24-cupy-merge/run-3.sh
set -uo pipefail
O=${OUT:-runs/cupy-merge-3}
W=/tmp/cupy-merge-3
mkdir -p "$O" "$W"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
t0=$SECONDS
stamp() { echo "[$((SECONDS - t0)) s] $*"; }
cell() { echo "{\"name\": \"llama3-8b\", \"num_q_heads\": 32, \"num_kv_heads\": 8, \"head_dim\": 128, \"seq_lens\": [$1], \"layout\": \"dense\", \"dtype\": \"bfloat16\"}"; }
run() {  # name, seq_len, harness arguments
  local name=$1 seq=$2; shift 2
  timeout 60 python3 -m harness run --problem "$(cell $seq)" --timing cold --out "$W/$name" "$@" \
    > "$W/$name.log" 2>&1
  stamp "$name exit $?"
}
for seq in 1024 2048 4096 8192 16384; do run plan-$seq $seq --backends cupy,torch-cudnn --variants dense,split-k; done
run split8-1024 1024 --backends cupy --variants split-k --num-splits 8
run split11-4096 4096 --backends cupy --variants split-k --num-splits 11
run split13-8192 8192 --backends cupy --variants split-k --num-splits 13
run split15-16384 16384 --backends cupy --variants split-k --num-splits 15
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_shared_mem,launch__registers_per_thread,smsp__inst_executed.sum,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,launch__grid_size,launch__block_size
prof() {  # label, then run_one.py's arguments
  local label=$1; shift
  timeout 90 ncu --profile-from-start off --metrics $M --launch-count 6 python3 scripts/run_one.py "$@" \
    > "$W/ncu-$label.txt" 2>&1
  stamp "ncu $label exit $?"
}
prof 1x1k-cupy-split cupy/split-k 1 1024 dense
prof 1x1k-cupy-split8 cupy/split-k 1 1024 dense '{}' 8
prof 1x1k-cudnn torch-cudnn/dense 1 1024 dense
prof 16x4k-cupy-dense cupy/dense 16 4096 dense
prof 16x1k-cupy-dense cupy/dense 16 1024 dense
prof 16x1k-cupy-paged cupy/paged 16 1024 paged
tar czf "$O/call3.tgz" -C "$W" .
python3 - "$W" <<'PY'
import csv, glob, os, sys
for f in sorted(glob.glob(f"{sys.argv[1]}/*/results.csv")):
    run = os.path.basename(os.path.dirname(f))
    print(run, " ".join(f"{r['backend']}/{r['algorithm']}={r['median_us']}({r['config'][1:40]})"
                        for r in csv.DictReader(open(f)) if r["status"] == "PASS"))
PY
for f in "$W"/ncu-*.txt; do echo "== $(basename "$f")"; grep -E "^  [A-Za-z_]|duration|dram__|grid_size|block_size|warps_active|inst_executed|long_scoreboard" "$f" | head -40; done
