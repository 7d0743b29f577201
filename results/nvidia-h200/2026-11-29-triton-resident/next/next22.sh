#!/usr/bin/env bash
# Registered run (../README.md): Triton's split-K ring narrowed while its compiled kernel would
# hold one program an SM (branch hyp/triton-resident) against main's widest ring, on problems
# of seeds 3600-3899 no run has seen. One GPU, no wheel, about 8 minutes. From the repository
# root:
#   git checkout hyp/triton-resident && bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-triton-resident/next/* gpu-session/
#   bash scripts/light_tree.sh on
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next22.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (if it has not printed 'next22 done')
# The A/B, both orders, Triton's split-K: trp (8 paged problems whose rule tile holds the head dim
# in one 256-dim tile), trd (8 dense ones, the same), trc (4 whose head dim is in two tiles:
# controls, their ring holds two programs an SM already and should not change)
set -u
cd "$(dirname "$0")/.."
ORDERS=2 RUNS="trp|150|--workload-file gpu-session/trn-paged.json --backends triton --variants split-k;
               trd|150|--workload-file gpu-session/trn-dense.json --backends triton --variants split-k;
               trc|90|--workload-file gpu-session/trn-ctl.json --backends triton --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for lane in trp trd trc; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null | cut -c1-150 \
    || echo "$lane: no comparison"
done
grep -hE "rc |PASS|FAIL" "$W/ab.log" | sort | uniq -c
for lane in trp trd trc; do sed -n '/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null | sed "s/^/$lane: /"; done
echo "next22 done"
