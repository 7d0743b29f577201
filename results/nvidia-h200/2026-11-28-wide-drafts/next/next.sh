#!/usr/bin/env bash
# Registered next run (../README.md, "Registered next run"): Gluon's warp-specialized one-pass
# kernel for wide drafts (impls/gluon/_ws.py, on main, reached by config while its rule is off),
# then the rule switched on against main. FA3's wheels installed first (.gpu-wheels-all 1-3
# copied, 4 installed), for step 3. One GPU, about 12 minutes. From the repository root, on main:
#   git checkout -b hyp/ws-rule && sed -i 's/^BY_RULE = False/BY_RULE = True/' impls/gluon/_ws.py \
#     && git commit -qam "Gluon: the warp-specialized kernel by rule (registered A/B)"
#   bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-wide-drafts/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     # until it prints 'next done'
# 0. sanitize.py: the kernel forced on three small drafts under compute-sanitizer's synccheck and
#    racecheck, each checked against the oracle (its mbarrier ring has not run anywhere)
# 1. correctness (the branch's code is main's but for the rule): the conformance suite on Gluon,
#    then the kernel forced wherever it can run (warp_spec 1, one-pass; rows of 64 or fewer
#    leave the second consumer all padding) on spec-decode's drafts, on seed 566's shapes at
#    q_len 8 and on ws.json, every cell checked against the oracle (no timing)
# 2. the A/B, both orders: ws.json, the first 12 drafts of seeds 560-639 at q_len 8 the rule
#    takes (ws_pick.txt; scripts/pick_problems.py --fits impls.gluon._ws:fits on the CPU), Gluon
#    one-pass (changed: by rule) and split-K (unchanged: the control)
# 3. the same drafts, Gluon and FA3, for the ratio to the vendor
set -u
cd "$(dirname "$0")/.."
for tool in synccheck racecheck; do
  PYTHONPATH=. timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 python3 gpu-session/sanitize.py \
    > "$W/sanitize-$tool.log" 2>&1
  echo "sanitize $tool rc $?"; tail -n 4 "$W/sanitize-$tool.log"
done
CONFORMANCE="gluon:150" \
RUNS="forced-spec|150|--workloads spec-decode --backends gluon --variants dense,paged --config {\"warp_spec\":1} --kv-dtype none --no-timing;
      forced-h566|120|--workloads heldout:566 --q-len 8 --backends gluon --variants dense,paged --config {\"warp_spec\":1} --kv-dtype none --no-timing;
      forced-ws|120|--workload-file gpu-session/ws.json --backends gluon --variants dense,paged --config {\"warp_spec\":1} --kv-dtype none --no-timing" \
  W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1
cat "$W/conf.log"
ORDERS=2 RUNS="ws|240|--workload-file gpu-session/ws.json --backends gluon" W=$W/ab \
  bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
sed -n '/^implementation/,/^summary/p' "$W/ab/compare-ws.txt" 2>/dev/null || echo "ws: no comparison"
RUNS="wsv|200|--workload-file gpu-session/ws.json --backends gluon,flash_attn3" W=$W/vendor \
  bash scripts/gpu_pipeline.sh > "$W/vendor.log" 2>&1
python3 scripts/vendor_ratios.py "$W/vendor/wsv" 2>&1 | head -4
echo "next done"
