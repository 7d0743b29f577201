#!/usr/bin/env bash
# Registered run (../README.md, "Split-K's rule narrowed to wide head-dim tiles"): split-K's rule
# on both layouts where the head dim's second tile is at least 64 dims (_ws.fits_split), against
# main, on drafts no run has seen. FA3's wheel installed first (one folder, `device_run.sh install
# .gpu-wheels/1`), for step 3. One GPU, about 7 minutes. From the repository root:
#   git checkout -b hyp/ws-split-wide && sed -i 's/"split-k": False}/"split-k": True}/' \
#     impls/gluon/_ws.py && git commit -qam "Gluon: split-K's warp-specialized rule on (registered A/B)"
#   bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-wide-drafts/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next5.sh 520
# 1. the split-K A/B, both orders, on wsw_dense.json (the first 12 dense drafts of seeds 1040-1119
#    at q_len 8 that pays_split_wide takes with fewer (sequence, KV head) pairs than SMs) and
#    wsw_paged.json (the same of seeds 1120-1199, paged); every timed cell checked by the oracle
# 2. ncu, each by both kernels, on the worst dense losses of the last run: split-K 971.21 (head
#    dim 144, +21 %) and one-pass 884.8 (head dim 256, ragged, +32 %); on the branch neither rule
#    takes them, so the plain profile is the tile kernel's
# 3. both sets, Gluon and FA3, for the ratio to the vendor
set -u
cd "$(dirname "$0")/.."
ORDERS=2 RUNS="wswd|200|--workload-file gpu-session/wsw_dense.json --backends gluon --variants split-k;
               wswp|200|--workload-file gpu-session/wsw_paged.json --backends gluon --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for lane in wswd wswp; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null || echo "$lane: no comparison"
done
NCU_Q_LEN=8 NCU="gluon/split-k:heldout:971:21 gluon/split-k:heldout:971:21:{\"warp_spec\":1}
     gluon/one-pass:heldout:884:8 gluon/one-pass:heldout:884:8:{\"warp_spec\":1,\"tma\":1}" W=$W/ncu \
  bash scripts/gpu_pipeline.sh > "$W/ncu.log" 2>&1
cat "$W/ncu.log"
RUNS="wswdv|200|--workload-file gpu-session/wsw_dense.json --backends gluon,flash_attn3;
      wswpv|200|--workload-file gpu-session/wsw_paged.json --backends gluon,flash_attn3" W=$W/vendor \
  bash scripts/gpu_pipeline.sh > "$W/vendor.log" 2>&1
for lane in wswdv wswpv; do python3 scripts/vendor_ratios.py "$W/vendor/$lane" 2>&1 | head -4; done
echo "next5 done"
