#!/usr/bin/env bash
# Registered next run (../README.md, "The TMA loader: registered next run"): the warp-specialized
# kernels' TMA loader for dense caches (DENSE_TMA 1, impls/gluon/_ws.py load_tma; on main reached
# by config only), then the rules taking dense caches by it against main. FA3's wheels installed
# first (the workplace's wheel packer, fa3: one folder, `device_run.sh install .gpu-wheels/1`),
# for step 4. One GPU, about 20 minutes, the steps in order of priority. From the repository root:
#   git checkout -b hyp/ws-dense && sed -i 's/^LAYOUTS = ("paged",)/LAYOUTS = ("paged", "dense")/; s/"split-k": False}/"split-k": True}/' \
#     impls/gluon/_ws.py && git commit -qam "Gluon: the warp-specialized kernels by rule on dense caches too, by TMA (registered A/B)"
#   bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-wide-drafts/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next4.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     # at once: the machine goes back 30 s after a call
# 0. sanitize.py tma under synccheck: the TMA loader on four small dense drafts whose edge tiles
#    the loader zeroes (a window's start, the end), each checked against the oracle (racecheck
#    is left out: it flags a correct mbarrier hand-off, race-control.log)
# 1. the kernels forced with tma 1 (no timing, every cell against the oracle): spec-decode's
#    dense drafts, seed 566's at q_len 8 (dense and split-K), ws_dense.json, wss_dense.json
# 2. the one-pass A/B, both orders, on ws_dense.json (the first 12 dense drafts of seeds 880-959
#    at q_len 8 where the design pays and the SMs are filled: ws_dense_pick.txt)
# 3. the split-K A/B, both orders, on wss_dense.json (the first 12 of seeds 960-1039 with fewer
#    (sequence, KV head) pairs than SMs: wss_dense_pick.txt)
# 4. both sets, Gluon and FA3, for the ratio to the vendor
# 5. ncu on the two worst losses so far, each kernel: one-pass 565.13 (dense, +24.4 % with the
#    cp.async loader) by the tile kernel and by the TMA loader; split-K 802.17 (pages of 1 token,
#    +3.7 %, the miss that keeps split-K's rule off) by the tile kernel and warp-specialized
# 6. the conformance suite on Gluon, as long as the call leaves (its draws take warp_spec and tma)
set -u
cd "$(dirname "$0")/.."
PYTHONPATH=. timeout 150 compute-sanitizer --tool synccheck --error-exitcode 9 python3 gpu-session/sanitize.py tma \
  > "$W/sanitize-tma.log" 2>&1
echo "sanitize tma rc $?"; tail -n 6 "$W/sanitize-tma.log"
F='{"warp_spec":1,"tma":1}'
RUNS="forced-spec|100|--workloads spec-decode --backends gluon --variants dense --config $F --kv-dtype none --no-timing;
      forced-h566|150|--workloads heldout:566 --q-len 8 --backends gluon --variants dense,split-k --config $F --kv-dtype none --no-timing;
      forced-wsd|100|--workload-file gpu-session/ws_dense.json --backends gluon --variants dense --config $F --no-timing;
      forced-wssd|100|--workload-file gpu-session/wss_dense.json --backends gluon --variants split-k --config $F --no-timing" \
  W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1
cat "$W/conf.log"
ORDERS=2 RUNS="wsd|200|--workload-file gpu-session/ws_dense.json --backends gluon --variants dense;
               wssd|200|--workload-file gpu-session/wss_dense.json --backends gluon --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for lane in wsd wssd; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null || echo "$lane: no comparison"
done
RUNS="wsdv|200|--workload-file gpu-session/ws_dense.json --backends gluon,flash_attn3;
      wssdv|200|--workload-file gpu-session/wss_dense.json --backends gluon,flash_attn3" W=$W/vendor \
  bash scripts/gpu_pipeline.sh > "$W/vendor.log" 2>&1
for lane in wsdv wssdv; do python3 scripts/vendor_ratios.py "$W/vendor/$lane" 2>&1 | head -4; done
NCU_Q_LEN=8 NCU="gluon/one-pass:heldout:565:13 gluon/one-pass:heldout:565:13:{\"warp_spec\":1,\"tma\":1}
     gluon/split-k:heldout:802:17 gluon/split-k:heldout:802:17:{\"warp_spec\":1}" W=$W/ncu \
  bash scripts/gpu_pipeline.sh > "$W/ncu.log" 2>&1
cat "$W/ncu.log"
CONFORMANCE="gluon:240" W=$W/conformance bash scripts/gpu_pipeline.sh > "$W/conformance.log" 2>&1
tail -n 3 "$W/conformance.log"
echo "next4 done"
