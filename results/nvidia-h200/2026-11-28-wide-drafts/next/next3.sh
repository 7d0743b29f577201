#!/usr/bin/env bash
# The paged-only rules' A/B (../README.md, "The rules narrowed to paged caches"): the one-pass
# and split-K rules, now paged only, switched on (a one-line branch commit, BY_RULE = True) against
# main, both orders, on drafts of unseen seeds (one-pass 720-799, split-K 800-879) picked on the
# CPU by the narrowed rules. No wheels. From the repository root:
#   git checkout -b hyp/ws-paged && sed -i 's/^BY_RULE = False/BY_RULE = True/' impls/gluon/_ws.py \
#     && git commit -qam "Gluon: the warp-specialized kernels by rule, paged (registered A/B)"
#   bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-28-wide-drafts/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next3.sh 500
set -u
cd "$(dirname "$0")/.."
ORDERS=2 RUNS="wsp|200|--workload-file gpu-session/ws_paged.json --backends gluon --variants dense,paged;
               wssp|200|--workload-file gpu-session/wss_paged.json --backends gluon --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for lane in wsp wssp; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null || echo "$lane: no comparison"
done
echo "next3 done"
