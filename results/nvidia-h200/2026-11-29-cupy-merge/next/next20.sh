#!/usr/bin/env bash
# Registered run (../README.md): CuPy's merge of the warps' states a warp a row (branch
# hyp/cupy-merge) against main. One GPU, no vendor wheel, about 15 minutes. From the
# repository root:
#   git checkout hyp/cupy-merge && bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-cupy-merge/next/* gpu-session/
#   bash scripts/light_tree.sh on
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next20.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (if it has not printed 'next20 done')
# 1. correctness, no timing, the branch: spec-decode (q_len 2-8: rows of several tokens, the
#    packed (token, head)), the window workload, fp32 (the CUDA-core kernels' merge)
# 2. the A/Bs, both orders: cmw (heldout:481.20, .23, .8, split-K), cmu (16 unseen, seeds
#    3300-3399, tensor cores, both variants), cmc (8 unseen shapes of seed 3400 in fp32: CUDA cores)
# 3. CuPy's conformance suite, complete, on the branch
# 4. (not part of the prediction) ncu's instruction counts on 481.20's split kernel, both trees
set -u
cd "$(dirname "$0")/.."
RUNS="spec|150|--workloads spec-decode --backends cupy --kv-dtype none --no-timing;
      window|150|--workloads window --backends cupy --no-timing;
      fp32|100|--workload-file gpu-session/cmc.json --backends cupy --no-timing" \
  W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1
grep -E "rc |PASS|FAIL" "$W/conf.log"
ORDERS=2 RUNS="cmw|100|--workload-file gpu-session/cmw.json --backends cupy --variants split-k;
               cmu|150|--workload-file gpu-session/cmu.json --backends cupy;
               cmc|120|--workload-file gpu-session/cmc.json --backends cupy" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
for lane in cmw cmu cmc; do
  sed -n '/^implementation/,/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null | cut -c1-150 \
    || echo "$lane: no comparison"
done
CONFORMANCE="cupy:240" W=$W/conformance bash scripts/gpu_pipeline.sh > "$W/conformance.log" 2>&1
tail -n 3 "$W/conformance.log"
old=$(mktemp -d)
cp -r impls specs harness scripts conformance pyproject.toml "$old"/
(cd ab-old && find . -type f ! -name '.*' -exec cp --parents {} "$old"/ \;)
while read -r path; do [ -n "$path" ] && rm -f "$old/$path"; done < ab-old/.absent
SECTIONS=SpeedOfLight,InstructionStats,SchedulerStats,WarpStateStats
(cd "$old" && NCU="cupy/split-k:heldout:481:20" NCU_SECTIONS=$SECTIONS W=$W/ncu-main \
  bash scripts/gpu_pipeline.sh) > "$W/ncu-main.log" 2>&1
NCU="cupy/split-k:heldout:481:20" NCU_SECTIONS=$SECTIONS W=$W/ncu-branch \
  bash scripts/gpu_pipeline.sh > "$W/ncu-branch.log" 2>&1
for tree in main branch; do
  echo "$tree: $(grep -rhE "^ +(Duration|Executed Instructions) " "$W/ncu-$tree" | tr -s ' ' | tr '\n' ';')"
done
for lane in cmw cmu cmc; do sed -n '/^summary/p' "$W/ab/compare-$lane.txt" 2>/dev/null | sed "s/^/$lane: /"; done
echo "next20 done"
