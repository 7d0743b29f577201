#!/usr/bin/env bash
# Registered next run (../README.md, "64-token tiles and balanced dense batches: registered next
# run"): the warp-specialized consumers on 64-token tiles where they fit (dense caches, head-dim
# tiles of 192 dims or fewer: _ws.WS_TILE_RULE, wide_tile_fits), split-K's rule taking those dense
# drafts, and one pass's taking dense batches it runs balanced (_ws.balanced), against main. FA3's
# wheel first (one folder, `device_run.sh install .gpu-wheels/1`), for step 4. One GPU, about 15
# minutes: two calls, `start` then at once `wait`. From the repository root:
#   git checkout -b hyp/ws-dense2 && sed -i 's/^WS_TILE_RULE = False/WS_TILE_RULE = True/; /^LAYOUTS = /s/("paged",)/("paged", "dense")/g' \
#     impls/gluon/_ws.py && git commit -qam "Gluon: 64-token warp-specialized tiles by rule, both rules on dense caches (registered A/B)"
#   bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-wide-drafts/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next6.sh 520
#   OUT=$OUT bash scripts/device_run.sh wait 540
# 1. correctness, no timing: the branch's default on wst_dense.json and wsb_dense.json and
#    the 64-token tiles forced on spec-decode (one-pass and split-K by cp.async; dense by TMA)
# 2. the A/Bs, both orders: split-K on wst_dense.json (the first 12 dense drafts of seeds
#    1200-1279 at q_len 8 that pays_split_wide_tile takes with fewer (sequence, KV head) pairs
#    than SMs: wst_dense_pick.txt); one pass on wsb_dense.json (the first 12 of seeds 1280-1359
#    that pays_dense_balanced takes with the SMs filled: wsb_dense_pick.txt); and, seen (not the
#    test), wss_dense.json, whose 4 drafts of head dims 144 and 160 were 16-28 % slower with
#    32-token tiles
# 3. ncu on 971.21 (split-K, head dim 144) by the branch's default: 64-token tiles
# 4. Gluon and FA3 on wst_dense.json, wsb_dense.json and wsw_paged.json (split-K's paged rule,
#    on main since session 71, never beside FA3: that call's machine went back first)
# 5. the conformance suite on Gluon, for the time left
set -u
cd "$(dirname "$0")/.."
W64='{"warp_spec":1,"block_n":64,"tma":0}'  # dense tiles by cp.async (the branch's default: TMA)
RUNS="tile-wstd|120|--workload-file gpu-session/wst_dense.json --backends gluon --variants split-k --no-timing;
      tile-wsbd|120|--workload-file gpu-session/wsb_dense.json --backends gluon --variants dense --no-timing;
      tile-spec|150|--workloads spec-decode --backends gluon --variants dense,split-k --config $W64 --kv-dtype none --no-timing;
      tile-spec-tma|150|--workloads spec-decode --backends gluon --variants dense --config {\"warp_spec\":1,\"block_n\":64,\"tma\":1} --kv-dtype none --no-timing" \
  W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1
cat "$W/conf.log"
ORDERS=2 RUNS="wstd|200|--workload-file gpu-session/wst_dense.json --backends gluon --variants split-k;
               wsbd|200|--workload-file gpu-session/wsb_dense.json --backends gluon --variants dense;
               wssd|200|--workload-file gpu-session/wss_dense.json --backends gluon --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for lane in wstd wsbd wssd; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null || echo "$lane: no comparison"
done
NCU_Q_LEN=8 NCU="gluon/split-k:heldout:971:21" W=$W/ncu bash scripts/gpu_pipeline.sh > "$W/ncu.log" 2>&1
cat "$W/ncu.log"
RUNS="wstdv|200|--workload-file gpu-session/wst_dense.json --backends gluon,flash_attn3;
      wsbdv|200|--workload-file gpu-session/wsb_dense.json --backends gluon,flash_attn3;
      wswpv|200|--workload-file gpu-session/wsw_paged.json --backends gluon,flash_attn3" W=$W/vendor \
  bash scripts/gpu_pipeline.sh > "$W/vendor.log" 2>&1
for lane in wstdv wsbdv wswpv; do python3 scripts/vendor_ratios.py "$W/vendor/$lane" 2>&1 | head -4; done
CONFORMANCE="gluon:240" W=$W/conformance bash scripts/gpu_pipeline.sh > "$W/conformance.log" 2>&1
tail -n 3 "$W/conformance.log"
echo "next6 done"
