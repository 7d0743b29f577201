#!/usr/bin/env bash
# Registered run (../README.md, "Registered before its run"): Triton's and Gluon's one-pass
# grids with a sequence's KV heads side by side in launch order, a head's row blocks beside each other (split-K's
# and CuPy's order): Triton's and Gluon's tile kernels and Gluon's warp-specialized kernel, branch
# hyp/head-order, against main. No vendor wheel (next11's run, which needs FA3's, can follow on
# the same session's budget). One GPU, about 16 minutes: two calls, `start`, then at once `wait`
# (a third `wait` if it has not printed 'next10 done'). From the repository root:
#   git checkout hyp/head-order && bash scripts/gpu_ab.sh old main
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-head-order/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next10.sh 520
#   OUT=$OUT bash scripts/device_run.sh wait 540    (again until it prints 'next10 done')
# 1. correctness, no timing: spec-decode on the one-pass variants of Triton and Gluon (several row
#    blocks a head), Gluon's tile kernel forced (warp_spec 0) and its WS kernel forced
# 2. the A/Bs, both orders, one-pass variants only: hot (Triton, q_len 1), hot8 (Triton, q_len 8),
#    hog (Gluon's tile kernel, q_len 1: _ws.fits holds on none), how (Gluon WS, q_len 8)
# 3. ncu's DRAM bytes by the branch on a draft of each kernel whose rows are not 256-byte multiples
set -u
cd "$(dirname "$0")/.."
ONE="--variants dense,paged"
RUNS="spec-t|150|--workloads spec-decode --backends triton $ONE --kv-dtype none --no-timing;
      spec-g0|150|--workloads spec-decode --backends gluon $ONE --config {\"warp_spec\":0} --kv-dtype none --no-timing;
      spec-g1|150|--workloads spec-decode --backends gluon $ONE --config {\"warp_spec\":1} --kv-dtype none --no-timing" \
  W=$W/conf bash scripts/gpu_pipeline.sh > "$W/conf.log" 2>&1
cat "$W/conf.log"
ORDERS=2 RUNS="hot|200|--workload-file gpu-session/hot.json --backends triton $ONE;
               hot8|200|--workload-file gpu-session/hot8.json --backends triton $ONE;
               hog|200|--workload-file gpu-session/hog.json --backends gluon $ONE;
               how|200|--workload-file gpu-session/how.json --backends gluon $ONE" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab.log" 2>&1
summaries() {
  for lane in hot hot8 hog how; do
    if [ -f "$W/ab/compare-$lane.txt" ]; then
      sed -n '/^summary/p' "$W/ab/compare-$lane.txt" | sed "s/^/$lane: /"
    else
      echo "$lane: no comparison"
    fi
  done
}
summaries
NCU_SECTIONS=SpeedOfLight NCU_METRICS=dram__bytes_read.sum,dram__bytes_write.sum \
  NCU="triton/dense:heldout:1680:2 gluon/dense:heldout:1760:14" W=$W/ncu \
  bash scripts/gpu_pipeline.sh > "$W/ncu.log" 2>&1
NCU_Q_LEN=8 NCU_SECTIONS=SpeedOfLight NCU_METRICS=dram__bytes_read.sum,dram__bytes_write.sum \
  NCU="gluon/dense:heldout:1848:23 triton/dense:heldout:1921:7" W=$W/ncu \
  bash scripts/gpu_pipeline.sh >> "$W/ncu.log" 2>&1
for f in "$W"/ncu/*.txt; do echo "$f"; grep -E "fewest|Duration|dram__" "$f" | head -4; done
summaries
echo "next10 done"
