#!/usr/bin/env bash
# Registered run (../README.md): CuPy's tensor-core copies a 16-byte column a thread (branch
# hyp/cupy-copy-lanes) against main. One GPU, no vendor wheel, about 18 minutes. From the
# repository root:
#   git checkout hyp/cupy-copy-lanes && bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-cupy-copies/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next15.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (if it has not printed 'next15 done')
# 1. correctness, no timing, the branch: spec-decode (q_len 2-8), the same with an fp8 cache
#    (its rings copy D bytes a row), the window workload (ranges cut by a window)
# 2. the A/Bs, both orders: ccw (split-K, 4-warp CTAs: head dims 208-256), ccs (split-K), cco
#    (one pass), ccq (split-K, drafts of 8 tokens); all on tensor cores, seeds 2560-2879
# 3. CuPy's conformance suite, complete, on the branch
# 4. (not part of the prediction) ncu's instruction and scheduler sections on 481.23's split
#    kernel, main's and the branch's
set -u
cd "$(dirname "$0")/.."
RUNS="spec|150|--workloads spec-decode --backends cupy --kv-dtype none --no-timing;
      spec-fp8|150|--workloads spec-decode --backends cupy --kv-dtype float8_e5m2 --kv-scale head --no-timing;
      window|150|--workloads window --backends cupy --no-timing" \
  W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1
grep -E "rc |PASS|FAIL" "$W/conf.log"
ORDERS=2 RUNS="ccw|150|--workload-file gpu-session/ccw.json --backends cupy --variants split-k;
               ccs|150|--workload-file gpu-session/ccs.json --backends cupy --variants split-k;
               cco|120|--workload-file gpu-session/cco.json --backends cupy --variants dense,paged;
               ccq|120|--workload-file gpu-session/ccq.json --backends cupy --variants split-k" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for lane in ccw ccs cco ccq; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null || echo "$lane: no comparison"
done
CONFORMANCE="cupy:240" W=$W/conformance bash scripts/gpu_pipeline.sh > "$W/conformance.log" 2>&1
tail -n 3 "$W/conformance.log"
# main's kernel under ncu from a copy of the tree with ab-old/ laid over it (as gpu_ab.sh runs it)
old=$(mktemp -d)
cp -r impls specs harness scripts conformance pyproject.toml "$old"/
(cd ab-old && find . -type f ! -name '.*' -exec cp --parents {} "$old"/ \;)
while read -r path; do [ -n "$path" ] && rm -f "$old/$path"; done < ab-old/.absent
SECTIONS=SpeedOfLight,Occupancy,LaunchStats,InstructionStats,SchedulerStats,WarpStateStats
(cd "$old" && NCU="cupy/split-k:heldout:481:23" NCU_SECTIONS=$SECTIONS W=$W/ncu-main \
  bash scripts/gpu_pipeline.sh) > "$W/ncu-main.log" 2>&1
NCU="cupy/split-k:heldout:481:23" NCU_SECTIONS=$SECTIONS W=$W/ncu-branch \
  bash scripts/gpu_pipeline.sh > "$W/ncu-branch.log" 2>&1
tail -n 2 "$W/ncu-main.log" "$W/ncu-branch.log"
for lane in ccw ccs cco ccq; do sed -n '/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null | sed "s/^/$lane: /"; done
echo "next15 done"
