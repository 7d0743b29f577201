#!/usr/bin/env bash
# Registered run (../README.md, "Heads side by side in the one-pass launch: registered before its
# run"): the one-pass warp-specialized kernel's grid with a sequence's KV heads side by side in
# launch order (_ws.grid: (KV heads, sequences x row blocks)) against main's (sequences x row
# blocks, KV heads), on wsg.json (the first 12 drafts of unseen seeds 1600-1679 at q_len 8 that
# _ws.fits takes with the SMs filled: wsg_pick.txt; 8 dense, 4 paged). FA3's wheel first
# (`device_run.sh install .gpu-wheels/1`). One GPU, about 5 minutes, one call. From the root:
#   git checkout -b hyp/ws-head-order <the commit that swaps the grid>; bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-wide-drafts/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next9.sh 500
# 1. correctness, no timing: warp_spec forced on spec-decode (one pass, both layouts)
# 2. the A/B, both orders, on wsg.json
# 3. ncu's DRAM bytes on two dense drafts by the branch (head dims 224 and 192)
# 4. Gluon and FA3 on wsg.json
set -u
cd "$(dirname "$0")/.."
RUNS="tile-spec|150|--workloads spec-decode --backends gluon --variants dense,paged --config {\"warp_spec\":1} --kv-dtype none --no-timing" \
  W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1
cat "$W/conf.log"
ORDERS=2 RUNS="wsg|200|--workload-file gpu-session/wsg.json --backends gluon --variants dense,paged" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
sed -n '/^implementation/,/^summary/p' "$W/ab/compare-wsg.txt" 2>/dev/null || echo "wsg: no comparison"
NCU_Q_LEN=8 NCU_SECTIONS=SpeedOfLight NCU_METRICS=dram__bytes_read.sum,dram__bytes_write.sum \
  NCU="gluon/dense:heldout:1601:1 gluon/dense:heldout:1603:9" W=$W/ncu \
  bash scripts/gpu_pipeline.sh > "$W/ncu.log" 2>&1
for f in "$W"/ncu/*.txt; do echo "$f"; grep -E "^  [a-z_]+ \(|Duration|dram__" "$f" | head -4; done
RUNS="wsgv|150|--workload-file gpu-session/wsg.json --backends gluon,flash_attn3" W=$W/vendor \
  bash scripts/gpu_pipeline.sh > "$W/vendor.log" 2>&1
python3 scripts/vendor_ratios.py "$W/vendor/wsgv" 2>&1 | head -4
echo "next9 done"
