#!/usr/bin/env bash
# Registered run (../README.md): Numba's tensor-core kernel (branch hyp/numba-tc) checked on the
# GPU, the probe timed beside Numba's CUDA-core variants and the built-in vendor kernels, the
# knob tensor_cores A/B'd through the harness; and main's new '% layout' column's first GPU run.
# One GPU, no wheel, about 15 minutes. From the repository root:
#   git checkout hyp/numba-tc
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-numba-tc/next/* gpu-session/
#   bash scripts/light_tree.sh on
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next17.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (if it has not printed 'next17 done')
# 1. tests/test_numba_tc.py on the GPU (the inline-PTX mma itself), then under memcheck
# 2. tc_time.py on tcp.json: the one-pass probe beside Numba's variants, FA2 and cuDNN
# 3. the harness on tcp.json (dense) and tcq.json (paged), Numba alone: the rule's kernels, then
#    config tensor_cores=1; harness compare of the two (both variants); '% layout' in the rows
# 4. Numba's conformance suite on the branch (its config sweep draws tensor_cores 0 and 1)
# 5. (not part of the prediction) ncu on the probe's kernel, 3040.1
# 6. (not part of the prediction) ncu's source page of CuPy's split kernel on 481.20
set -u
cd "$(dirname "$0")/.."
timeout 240 python3 -m pytest tests/test_numba_tc.py -v -p no:cacheprovider > "$W/tc-tests.log" 2>&1
grep -E "PASSED|FAILED|ERROR|passed|failed" "$W/tc-tests.log" | tail -n 12
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 240 compute-sanitizer --tool memcheck --print-limit 20 \
  python3 -m pytest tests/test_numba_tc.py -q -p no:cacheprovider -k "oracle" > "$W/tc-memcheck.log" 2>&1
grep -E "ERROR SUMMARY|passed|failed" "$W/tc-memcheck.log" | tail -n 3
timeout 300 python3 gpu-session/tc_time.py gpu-session/tcp.json "$W/tc_time.json" > "$W/tc_time.log" 2>&1
cat "$W/tc_time.log"
RUNS="rule-d|150|--workload-file gpu-session/tcp.json --backends numba;
      tc-d|150|--workload-file gpu-session/tcp.json --backends numba --config {\"tensor_cores\":1};
      rule-p|150|--workload-file gpu-session/tcq.json --backends numba;
      tc-p|150|--workload-file gpu-session/tcq.json --backends numba --config {\"tensor_cores\":1}" \
  W=$W/runs bash scripts/gpu_pipeline.sh > "$W/runs.log" 2>&1
grep -E " rc |PASS" "$W/runs.log"
for set in d p; do
  python3 -m harness compare "$W/runs/rule-$set" "$W/runs/tc-$set" > "$W/compare-$set.txt" 2>&1
  sed -n '/^implementation/,/^summary/p' "$W/compare-$set.txt" | cut -c1-170
done
python3 - "$W" <<'PY'
import json, sys
from pathlib import Path
w = Path(sys.argv[1])
for name in ("rule-d", "rule-p"):
    try:
        prov = json.loads((w / f"runs/{name}/provenance.json").read_text())
        rows = json.loads((w / f"runs/{name}/results.json").read_text())["rows"]
    except (OSError, ValueError, KeyError) as e:
        print(f"{name}: no rows ({e})")
        continue
    limits = prov.get("layout_limits") or {}
    print(f"{name} layout_limits: {sum('us' in v for v in limits.values())} of {len(limits)} measured; "
          f"notes: {sorted({v['note'][:60] for v in limits.values() if 'note' in v})}")
    for r in rows:
        if r.get("median_us") is not None:
            print(f"  {r['problem'][:52]:52s} {r['impl']:14s} {r['median_us']:9.1f} us  "
                  f"% read {r.get('pct_read')}  % layout {r.get('pct_layout_read')}")
PY
CONFORMANCE="numba:200" W=$W/conformance bash scripts/gpu_pipeline.sh > "$W/conformance.log" 2>&1
tail -n 3 "$W/conformance.log"
timeout 150 ncu --kernel-name regex:decode_tc --launch-count 1 --section SpeedOfLight --section Occupancy \
  --section LaunchStats --section SchedulerStats --section WarpStateStats \
  python3 gpu-session/tc_time.py gpu-session/tcp1.json > "$W/ncu-tc.txt" 2>&1
grep -E "Duration|Registers|Achieved Occupancy|DRAM Throughput|Warp Cycles Per Issued" "$W/ncu-tc.txt" | head
# 6. (not part of the prediction) where CuPy's split kernel issues on 481.20: ncu's source page
#    (SASS, instructions executed a line), for ../../2026-11-29-after-copies/'s open question
problem=$(python3 -c "import json; from specs import workloads as w
print(json.dumps(w.heldout_problems(481)[20].to_dict()))")
timeout 200 ncu --kernel-name split_kernel --launch-count 1 --section InstructionStats \
  --section SourceCounters --page source --print-source sass \
  python3 -m harness run --problem "$problem" --backends cupy --variants split-k --no-timing --no-isolate \
  --out "$W/cupy-src-run" > "$W/ncu-cupy-source-481.20.txt" 2>&1
echo "cupy source page: $(wc -l < "$W/ncu-cupy-source-481.20.txt") lines"
echo "next17 done"
