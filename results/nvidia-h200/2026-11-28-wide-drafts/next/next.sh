#!/usr/bin/env bash
# Registered next run (../README.md, "Registered next run"): Gluon's warp-specialized kernels for
# wide drafts (impls/gluon/_ws.py, on main, reached by config while their rules are off), then the
# rules switched on against main. FA3's wheels installed first (.gpu-wheels-all 1-3 copied, 4
# installed), for step 4. One GPU, about 25 minutes: the steps run in this order of priority, so
# a cut loses the last. From the repository root, on main:
#   git checkout -b hyp/ws-rule && sed -i 's/^BY_RULE = False/BY_RULE = True/' impls/gluon/_ws.py \
#     && git commit -qam "Gluon: the warp-specialized kernels by rule (registered A/B)"
#   bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-wide-drafts/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     # until it prints 'next done'
# 0. sanitize.py: the kernels forced on four small drafts under compute-sanitizer's synccheck and
#    racecheck, each checked against the oracle (their mbarrier ring has not run anywhere)
# 1. correctness (the branch's code is main's but for the rules): the conformance suite on Gluon,
#    then the kernels forced (warp_spec 1; rows of 64 or fewer leave the second consumer all
#    padding) on spec-decode's drafts (one-pass), on seed 566's shapes at q_len 8 (both
#    variants), on ws.json (one-pass) and on ws_split.json (split-K), every cell checked
#    against the oracle (no timing)
# 2. the A/B of the one-pass rule, both orders: ws.json, the first 12 drafts of seeds 560-639 at
#    q_len 8 the rule takes (ws_pick.txt; scripts/pick_problems.py --fits impls.gluon._ws:fits)
# 3. the A/B of the split-K rule, both orders: ws_split.json, the first 12 drafts of seeds
#    640-719 at q_len 8 that split-K's rule takes with fewer (sequence, KV head) pairs than SMs
#    (ws_split_pick.txt; --fits impls.gluon._ws:fits_split --max-programs 131)
# 4. both sets, Gluon and FA3, for the ratio to the vendor
set -u
cd "$(dirname "$0")/.."
for tool in synccheck racecheck; do
  PYTHONPATH=. timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 python3 gpu-session/sanitize.py \
    > "$W/sanitize-$tool.log" 2>&1
  echo "sanitize $tool rc $?"; tail -n 5 "$W/sanitize-$tool.log"
done
CONFORMANCE="gluon:150" \
RUNS="forced-spec|100|--workloads spec-decode --backends gluon --variants dense,paged --config {\"warp_spec\":1} --kv-dtype none --no-timing;
      forced-h566|150|--workloads heldout:566 --q-len 8 --backends gluon --config {\"warp_spec\":1} --kv-dtype none --no-timing;
      forced-ws|100|--workload-file gpu-session/ws.json --backends gluon --variants dense,paged --config {\"warp_spec\":1} --no-timing;
      forced-wss|100|--workload-file gpu-session/ws_split.json --backends gluon --variants split-k --config {\"warp_spec\":1} --no-timing" \
  W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1
cat "$W/conf.log"
ORDERS=2 RUNS="ws|200|--workload-file gpu-session/ws.json --backends gluon --variants dense,paged;
               wss|200|--workload-file gpu-session/ws_split.json --backends gluon --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for lane in ws wss; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null || echo "$lane: no comparison"
done
RUNS="wsv|200|--workload-file gpu-session/ws.json --backends gluon,flash_attn3;
      wssv|200|--workload-file gpu-session/ws_split.json --backends gluon,flash_attn3" W=$W/vendor \
  bash scripts/gpu_pipeline.sh > "$W/vendor.log" 2>&1
for lane in wsv wssv; do python3 scripts/vendor_ratios.py "$W/vendor/$lane" 2>&1 | head -4; done
echo "next done"
