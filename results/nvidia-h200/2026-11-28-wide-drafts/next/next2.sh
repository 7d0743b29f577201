#!/usr/bin/env bash
# The registered run's second call (next.sh's machine was lost after steps 0-1 and the first A/B
# run; ../README.md, "Registered next run: what ran"): racecheck's controls (race_control.py),
# then next.sh's steps 2-4 unchanged. From the repository root, set up as next.sh says.
set -u
cd "$(dirname "$0")/.."
PYTHONPATH=. timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 python3 gpu-session/race_control.py \
  > "$W/race-control.log" 2>&1
echo "race control rc $?"; grep -E "control|SUMMARY|Error" "$W/race-control.log" | head -20
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
