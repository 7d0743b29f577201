#!/usr/bin/env bash
# Registered next run (../README.md, "Split-K on dense caches: wide head-dim tiles and 64-token
# tiles, registered"): split-K's rule on dense caches where both its tile conditions hold (a
# second head-dim tile of 0 or >= 64 dims, wide_dim_tiles, and 64-token tiles that fit,
# wide_tile_fits: head dims 161-192), against main. FA3's wheel first (`device_run.sh install
# .gpu-wheels/1`), for step 3. One GPU, about 11 minutes: two calls, `start` then at once `wait`.
# From the repository root:
#   git checkout -b hyp/ws-dense3 && sed -i '/^LAYOUTS = /s/"split-k": ("paged",)/"split-k": ("paged", "dense")/' \
#     impls/gluon/_ws.py && git commit -qam "Gluon: split-K's warp-specialized rule on dense caches (registered A/B)"
#   bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-wide-drafts/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next7.sh 520
#   OUT=$OUT bash scripts/device_run.sh wait 540
# 1. correctness, no timing: the branch's default on wsd_dense.json
# 2. the A/B, both orders: split-K on wsd_dense.json (the first 12 dense drafts of seeds 1360-1439
#    at q_len 8 that pays_split_tiles takes with fewer (sequence, KV head) pairs than SMs:
#    wsd_dense_pick.txt)
# 3. Gluon and FA3 on wsd_dense.json, wsb_dense.json (one pass's dense rule, on main since session
#    72) and wsw_paged.json (split-K's paged rule): next6.sh's step 4, which its machine lost
# 4. the conformance suite on Gluon, for the time left
set -u
cd "$(dirname "$0")/.."
RUNS="tile-wsdd|120|--workload-file gpu-session/wsd_dense.json --backends gluon --variants split-k --no-timing" \
  W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1
cat "$W/conf.log"
ORDERS=2 RUNS="wsdd|200|--workload-file gpu-session/wsd_dense.json --backends gluon --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
sed -n '/^implementation/,/^summary/p' "$W/ab/compare-wsdd.txt" 2>/dev/null || echo "wsdd: no comparison"
RUNS="wsddv|200|--workload-file gpu-session/wsd_dense.json --backends gluon,flash_attn3;
      wsbdv|200|--workload-file gpu-session/wsb_dense.json --backends gluon,flash_attn3;
      wswpv|200|--workload-file gpu-session/wsw_paged.json --backends gluon,flash_attn3" W=$W/vendor \
  bash scripts/gpu_pipeline.sh > "$W/vendor.log" 2>&1
for lane in wsddv wsbdv wswpv; do python3 scripts/vendor_ratios.py "$W/vendor/$lane" 2>&1 | head -4; done
CONFORMANCE="gluon:240" W=$W/conformance bash scripts/gpu_pipeline.sh > "$W/conformance.log" 2>&1
tail -n 3 "$W/conformance.log"
echo "next7 done"
