#!/usr/bin/env bash
# Registered run (../README.md): Numba's tensor-core probe (branch hyp/numba-tc) checked on the
# GPU, then timed beside Numba's variants and the built-in vendor kernels; and main's new
# '% layout' column (c78addb, 5de6dca), first run on a GPU. One GPU, no wheel, about 8 minutes.
# From the repository root:
#   git checkout hyp/numba-tc
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-numba-tc/next/* gpu-session/
#   bash scripts/light_tree.sh on
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next17.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (if it has not printed 'next17 done')
# 1. the probe against the oracle on the GPU (the inline-PTX mma itself), then under memcheck
# 2. tc_time.py on tcp.json (the first 10 problems of seeds 3040-3119 the probe takes)
# 3. the harness on tcp.json with Numba, Triton and CuPy: every timed row's '% layout' beside
#    '% read' (the provenance's layout_limits)
# 4. (not part of the prediction) ncu on the probe's kernel, 3040.1
set -u
cd "$(dirname "$0")/.."
timeout 240 python3 -m pytest tests/test_numba_tc.py -v -p no:cacheprovider > "$W/tc-tests.log" 2>&1
grep -E "PASSED|FAILED|ERROR|passed|failed" "$W/tc-tests.log" | tail -n 6
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 240 compute-sanitizer --tool memcheck --print-limit 20 \
  python3 -m pytest tests/test_numba_tc.py -q -p no:cacheprovider > "$W/tc-memcheck.log" 2>&1
grep -E "ERROR SUMMARY|passed|failed" "$W/tc-memcheck.log" | tail -n 3
timeout 300 python3 gpu-session/tc_time.py gpu-session/tcp.json "$W/tc_time.json" > "$W/tc_time.log" 2>&1
cat "$W/tc_time.log"
RUNS="layout|200|--workload-file gpu-session/tcp.json --backends numba,triton,cupy" \
  W=$W/runs bash scripts/gpu_pipeline.sh > "$W/runs.log" 2>&1
grep -E " rc |PASS" "$W/runs.log"
python3 - "$W" <<'PY'
import json, sys
from pathlib import Path
w = Path(sys.argv[1])
try:
    prov = json.loads((w / "runs/layout/provenance.json").read_text())
    rows = json.loads((w / "runs/layout/results.json").read_text())["rows"]
except (OSError, ValueError, KeyError) as e:
    sys.exit(f"layout: no rows ({e})")
limits = prov.get("layout_limits") or {}
print(f"layout_limits: {sum('us' in v for v in limits.values())} of {len(limits)} measured; "
      f"notes: {sorted({v['note'][:60] for v in limits.values() if 'note' in v})}")
best = {}
for r in rows:
    if r.get("median_us") is not None and (r["problem"] not in best or r["median_us"] < best[r["problem"]]["median_us"]):
        best[r["problem"]] = r
for p, r in best.items():
    print(f"{p[:58]:58s} {r['impl']:16s} {r['median_us']:9.1f} us  % read {r.get('pct_read')}  % layout {r.get('pct_layout_read')}")
PY
timeout 200 ncu --kernel-name regex:decode_tc --launch-count 1 --section SpeedOfLight --section Occupancy \
  --section LaunchStats --section SchedulerStats --section WarpStateStats \
  python3 gpu-session/tc_time.py gpu-session/tcp1.json > "$W/ncu-tc.txt" 2>&1
grep -E "Duration|Registers|Achieved Occupancy|DRAM Throughput|Warp Cycles Per Issued" "$W/ncu-tc.txt" | head
echo "next17 done"
