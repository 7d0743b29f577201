#!/usr/bin/env bash
# Registered next run (../README.md, "The consumers' overlap: registered before its run"): the
# warp-specialized consumers with FA3's overlap inside a warpgroup (_ws.WS_OVERLAP: a tile's
# softmax while the previous tile's P V is on the tensor cores), against main, on the drafts
# main's rules give the warp-specialized kernels. FA3's wheel first (`device_run.sh install
# .gpu-wheels/1`), for step 3. One GPU, about 16 minutes: two calls, `start` then at once `wait`.
# From the repository root:
#   git checkout -b hyp/ws-overlap && sed -i 's/^WS_OVERLAP = False/WS_OVERLAP = True/' impls/gluon/_ws.py \
#     && git commit -qam "Gluon: the warp-specialized consumers' overlap on (registered A/B)"
#   bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-wide-drafts/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next8.sh 520
#   OUT=$OUT bash scripts/device_run.sh wait 540
# 1. correctness, no timing: the branch's default on wso.json and wsos.json, and warp_spec forced
#    on spec-decode (both variants, both layouts: the overlap at q_len 2-8, one and two row
#    blocks; dense tiles by TMA, the default) and dense ones by cp.async
# 2. the A/Bs, both orders: one pass on wso.json (the first 12 drafts of unseen seeds 1440-1519
#    at q_len 8 that _ws.fits takes with the SMs filled: wso_pick.txt, 7 paged, 5 dense) and
#    split-K on wsos.json (the first 12 of seeds 1520-1599 that _ws.fits_split takes with fewer
#    (sequence, KV head) pairs than SMs: wsos_pick.txt, 8 paged, 4 dense)
# 3. Gluon and FA3 on both sets
# 4. ncu on one draft of each set by the branch (the consumers' issue stalls beside session 71's)
# 5. the conformance suite on Gluon, complete (about 290 s)
set -u
cd "$(dirname "$0")/.."
WS='{"warp_spec":1}'
RUNS="tile-wso|120|--workload-file gpu-session/wso.json --backends gluon --variants dense --no-timing;
      tile-wsos|120|--workload-file gpu-session/wsos.json --backends gluon --variants split-k --no-timing;
      tile-spec|150|--workloads spec-decode --backends gluon --variants dense,split-k --config $WS --kv-dtype none --no-timing;
      tile-spec-cp|150|--workloads spec-decode --backends gluon --variants dense --config {\"warp_spec\":1,\"tma\":0} --kv-dtype none --no-timing" \
  W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1
cat "$W/conf.log"
ORDERS=2 RUNS="wso|200|--workload-file gpu-session/wso.json --backends gluon --variants dense;
               wsos|200|--workload-file gpu-session/wsos.json --backends gluon --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for lane in wso wsos; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null || echo "$lane: no comparison"
done
RUNS="wsov|200|--workload-file gpu-session/wso.json --backends gluon,flash_attn3;
      wsosv|200|--workload-file gpu-session/wsos.json --backends gluon,flash_attn3" W=$W/vendor \
  bash scripts/gpu_pipeline.sh > "$W/vendor.log" 2>&1
for lane in wsov wsosv; do python3 scripts/vendor_ratios.py "$W/vendor/$lane" 2>&1 | head -4; done
NCU_Q_LEN=8 NCU="gluon/dense:heldout:1444:17 gluon/split-k:heldout:1525:1" W=$W/ncu \
  bash scripts/gpu_pipeline.sh > "$W/ncu.log" 2>&1
cat "$W/ncu.log"
CONFORMANCE="gluon:330" W=$W/conformance bash scripts/gpu_pipeline.sh > "$W/conformance.log" 2>&1
tail -n 3 "$W/conformance.log"
echo "next8 done"
