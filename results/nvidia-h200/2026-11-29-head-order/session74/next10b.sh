#!/usr/bin/env bash
# next10.sh's remainder (session 74): its machine was given back between its two calls after the
# conformance step and the A/Bs' first pair (old, new) of hot, hot8 and hog (how's new run cut
# short). Here: how in both orders, the second pair (new2, old2) of hot, hot8 and hog
# (gpu_ab.sh ORDERS=back; the first pair is compared with it on the CPU), then the ncu step as
# registered. Same branch, same sets, same options.
set -u
cd "$(dirname "$0")/.."
ONE="--variants dense,paged"
ORDERS=2 RUNS="how|200|--workload-file gpu-session/how.json --backends gluon $ONE" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab-how.log" 2>&1
grep -E '^summary' "$W/ab/compare-how.txt" | sed 's/^/how: /'
ORDERS=back RUNS="hot|200|--workload-file gpu-session/hot.json --backends triton $ONE;
               hot8|200|--workload-file gpu-session/hot8.json --backends triton $ONE;
               hog|200|--workload-file gpu-session/hog.json --backends gluon $ONE" \
  W=$W/ab bash scripts/gpu_ab.sh run > "$W/ab-back.log" 2>&1
NCU_SECTIONS=SpeedOfLight NCU_METRICS=dram__bytes_read.sum,dram__bytes_write.sum \
  NCU="triton/dense:heldout:1680:2 gluon/dense:heldout:1760:14" W=$W/ncu \
  bash scripts/gpu_pipeline.sh > "$W/ncu.log" 2>&1
NCU_Q_LEN=8 NCU_SECTIONS=SpeedOfLight NCU_METRICS=dram__bytes_read.sum,dram__bytes_write.sum \
  NCU="gluon/dense:heldout:1848:23 triton/dense:heldout:1921:7" W=$W/ncu \
  bash scripts/gpu_pipeline.sh >> "$W/ncu.log" 2>&1
for f in "$W"/ncu/*.txt; do echo "$f"; grep -E "fewest|Duration|dram__" "$f" | head -4; done
echo "next10 done"
