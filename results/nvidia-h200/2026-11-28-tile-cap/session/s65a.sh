#!/usr/bin/env bash
# Session 65, call a (2 x H100): Numba's GPU conformance in full on GPU 1 (the registered run's
# part 3, cut at 72 % when its machine went back); on GPU 0, why Triton and Gluon trail on
# heldout403.4 (57 x 20 tokens, paged16: launch-scale) and Triton on 403.9 (paged1, d144):
# launch configs in the vocabulary against the rule's, then ncu on 403.4.
set -u
cd "$(dirname "$0")/.."
( export CUDA_VISIBLE_DEVICES=1; CONFORMANCE="numba:500" W=$W/conf bash scripts/gpu_pipeline.sh ) > "$W/lane-conf.log" 2>&1 &
f="--workload-file gpu-session/h403_49.json --variants paged,split-k"
t="--backends triton $f"; g="--backends gluon $f"
RUNS="t-base|90|$t; t-token|60|$t --config {\"gather\":\"token\"};
 t-n32|60|$t --config {\"block_n\":32}; t-s1|60|$t --config {\"num_stages\":1};
 t-n32s1|60|$t --config {\"block_n\":32,\"num_stages\":1};
 t-n64s1tok|60|$t --config {\"block_n\":64,\"num_stages\":1,\"gather\":\"token\"};
 t-s2|60|$t --config {\"num_stages\":2};
 g-base|90|$g; g-n32|60|$g --config {\"block_n\":32}; g-s1|60|$g --config {\"num_stages\":1};
 g-n32s1|60|$g --config {\"block_n\":32,\"num_stages\":1};
 c-base|60|--backends cupy $f" \
NCU_SECTIONS="SpeedOfLight,LaunchStats,Occupancy,WarpStateStats,InstructionStats,SchedulerStats,MemoryWorkloadAnalysis" \
NCU="triton/paged:heldout:403:4 triton/paged:heldout:403:4:{\"gather\":\"token\"} gluon/paged:heldout:403:4 cupy/paged:heldout:403:4" \
  CUDA_VISIBLE_DEVICES=0 W=$W/diag bash scripts/gpu_pipeline.sh > "$W/lane-diag.log" 2>&1
wait
cat "$W/lane-diag.log" "$W/lane-conf.log"; tail -3 "$W/conf/conformance-numba.log"
python3 - "$W"/diag <<'PY'
import json, pathlib, sys
for run in sorted(pathlib.Path(sys.argv[1]).glob("*/rows.jsonl")):
    for line in run.read_text().splitlines():
        r = json.loads(line)
        print(f"{run.parent.name:10} {r['impl']:14} {r['spec']['name'][:14]:14} {r['status']:5} "
              f"{r.get('median_us', '')!s:7} {r.get('config_summary', r.get('reason', ''))[:60]}")
PY
for f in "$W"/diag/ncu-*.txt; do echo "== $(basename "$f")"
  grep -E "^\s+(Duration|Elapsed Cycles|Executed Instructions |Registers Per Thread|Achieved Occupancy|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Stall Long Scoreboard|Shared Memory Configuration Size|Dynamic Shared)" "$f" | tr -s ' ' | head -24
done
echo "s65a done"
