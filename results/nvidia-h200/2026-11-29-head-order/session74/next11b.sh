#!/usr/bin/env bash
# Registered run (../README.md, "The persistent one pass: registered before its run"): Gluon's
# warp-specialized one pass as a program a SM over the grid's items (_ws.WS_PERSISTENT, FA3's
# persistent scheduler, statically, the sequences longest first) against a program an item, both
# in one_pass_grid's order (branch hyp/ws-persistent, which sits on hyp/head-order). FA3's wheel
# first (`device_run.sh install .gpu-wheels/1`). One GPU, about 11 minutes: `start` then `wait`.
# From the repository root:
#   git checkout -b hyp/ws-persistent-on hyp/ws-persistent \
#     && sed -i 's/^WS_PERSISTENT = False/WS_PERSISTENT = True/' impls/gluon/_ws.py \
#     && git commit -qam "Gluon: the persistent one pass on (registered A/B)"
#   bash scripts/gpu_ab.sh old hyp/ws-persistent
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-head-order/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next11.sh 520
#   OUT=$OUT bash scripts/device_run.sh wait 540
# 1. correctness, no timing: the branch's default on wsp.json (one pass, both layouts), and
#    warp_spec forced on spec-decode (one pass, both layouts, TMA and cp.async dense tiles)
# 2. the A/B, both orders, on wsp.json (the first 12 drafts of unseen seeds 2000-2079 at q_len 8
#    that _ws.fits takes with the SMs filled: wsp_pick.txt; 6 dense, 6 paged)
# 3. ncu on 2000.13 (uniform, 5.2 waves) by the branch: time and DRAM bytes
# (session 74: steps 4 and 5 left for a later session: 596 s of device time was left)
set -u
cd "$(dirname "$0")/.."
ONE="--variants dense,paged"
RUNS="wsp|120|--workload-file gpu-session/wsp.json --backends gluon $ONE --no-timing;
      spec|150|--workloads spec-decode --backends gluon $ONE --config {\"warp_spec\":1} --kv-dtype none --no-timing;
      spec-cp|150|--workloads spec-decode --backends gluon --variants dense --config {\"warp_spec\":1,\"tma\":0} --kv-dtype none --no-timing" \
  W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1
cat "$W/conf.log"
ORDERS=2 RUNS="wsp|200|--workload-file gpu-session/wsp.json --backends gluon $ONE" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
sed -n '/^implementation/,/^summary/p' "$W/ab/compare-wsp.txt" 2>/dev/null || echo "wsp: no comparison"
NCU_Q_LEN=8 NCU_SECTIONS=SpeedOfLight,LaunchStats NCU_METRICS=dram__bytes_read.sum,dram__bytes_write.sum \
  NCU="gluon/dense:heldout:2000:13" W=$W/ncu bash scripts/gpu_pipeline.sh > "$W/ncu.log" 2>&1
for f in "$W"/ncu/*.txt; do echo "$f"; grep -E "fewest|^  [a-z_]+ \(|Duration|dram__" "$f" | head -5; done
sed -n "/^summary/p" "$W/ab/compare-wsp.txt" 2>/dev/null; echo "next11 done"
