#!/usr/bin/env bash
# Registered run (../README.md): Gluon's warp-specialized kernels with the ring as deep as a
# program's shared memory holds (branch hyp/ws-ring, WS_DEEP_RING turned on in a commit made
# here) against the branch as it is (WS_DEEP_RING off: main's kernels, PTX unchanged). One GPU,
# no vendor wheel, about 15 minutes. From the repository root:
#   git checkout -b hyp/ws-ring-on hyp/ws-ring \
#     && sed -i 's/^WS_DEEP_RING = False/WS_DEEP_RING = True/' impls/gluon/_ws.py \
#     && git commit -qam "Gluon WS: the deep ring on (registered A/B)"
#   bash scripts/gpu_ab.sh old hyp/ws-ring
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-ws-ring/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next14.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (if it has not printed 'next14 done')
# 1. correctness, no timing, the deep ring: spec-decode with the WS kernel forced, both layouts
#    (paged tiles gathered by cp.async, dense by TMA), dense by cp.async too; both sets
# 2. the A/Bs, both orders: wrp (one pass, seeds 2400-2479), wrs (split-K, seeds 2480-2559)
# 3. Gluon's conformance suite, complete, with the deep ring on (and main's Gluon code otherwise:
#    the head order and the overlap's removal have not been through the full suite on a GPU)
set -u
cd "$(dirname "$0")/.."
ONE="--variants dense,paged"
RUNS="spec|150|--workloads spec-decode --backends gluon $ONE --config {\"warp_spec\":1} --kv-dtype none --no-timing;
      spec-cp|150|--workloads spec-decode --backends gluon --variants dense --config {\"warp_spec\":1,\"tma\":0} --kv-dtype none --no-timing;
      spec-s|150|--workloads spec-decode --backends gluon --variants split-k --config {\"warp_spec\":1} --kv-dtype none --no-timing" \
  W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1
cat "$W/conf.log"
ORDERS=2 RUNS="wrp|200|--workload-file gpu-session/wrp.json --backends gluon $ONE;
               wrs|200|--workload-file gpu-session/wrs.json --backends gluon --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for lane in wrp wrs; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null || echo "$lane: no comparison"
done
CONFORMANCE="gluon:330" W=$W/conformance bash scripts/gpu_pipeline.sh > "$W/conformance.log" 2>&1
tail -n 3 "$W/conformance.log"
for lane in wrp wrs; do sed -n '/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null | sed "s/^/$lane: /"; done
echo "next14 done"
