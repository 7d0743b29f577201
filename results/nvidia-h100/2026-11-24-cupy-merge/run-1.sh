#!/usr/bin/env bash
# Issue 15's merge work, first device call (no vendor wheels needed: cuDNN comes with torch):
# the fused-merge tests and CuPy's conformance suite on the GPU; batch-1 cells (b1.json) with CuPy's
# split-K merged by the new combine kernel (default) and fused (MERGE=fused), beside cuDNN and
# Triton, and the code before (.old/, `git archive 6567c84`); then compute-sanitizer memcheck and
# racecheck over every CuPy kernel (scripts/sanitize.py: both merges).
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash results/nvidia-h100/2026-11-24-cupy-merge/run-1.sh
set -uo pipefail
R=results/nvidia-h100/2026-11-24-cupy-merge
O=${OUT:-runs/cupy-merge-1}
mkdir -p "$O"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
t0=$SECONDS
stamp() { echo "[$((SECONDS - t0)) s] $*"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton, cupy; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version(), 'triton', triton.__version__, 'cupy', cupy.__version__)"
  echo "commit ${DECODE_BENCH_COMMIT:-unset}"; } > "$O/env.txt" 2>&1
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_fused_merge.py > "$O/fused-merge-tests.log" 2>&1
stamp "fused-merge tests exit $?"
DECODE_BENCH_PROFILE=gpu timeout 240 python3 -m pytest conformance -q -n 8 -p no:cacheprovider \
  -W ignore::DeprecationWarning -k cupy > "$O/conformance.log" 2>&1
stamp "conformance exit $?"
timeout 150 python3 -m harness run --backends cupy,torch-cudnn,triton --workload-file $R/b1.json \
  --timing cold --out "$O/b1-kernel" > "$O/b1-kernel.log" 2>&1
stamp "b1 kernel exit $?"
timeout 90 python3 -m harness run --backends cupy --variants split-k --workload-file $R/b1.json \
  --timing cold --config '{"MERGE": "fused"}' --out "$O/b1-fused" > "$O/b1-fused.log" 2>&1
stamp "b1 fused exit $?"
(cd .old && DECODE_BENCH_COMMIT=6567c84 timeout 90 python3 -m harness run --backends cupy \
   --variants split-k --workload-file ../$R/b1.json --timing cold --out "$O/b1-before" \
   > "$O/b1-before.log" 2>&1; echo "[$((SECONDS - t0)) s] before exit $?")
timeout 100 compute-sanitizer --tool memcheck python3 scripts/sanitize.py cupy > "$O/memcheck.log" 2>&1
stamp "memcheck exit $?"
timeout 100 compute-sanitizer --tool racecheck python3 scripts/sanitize.py cupy > "$O/racecheck.log" 2>&1
stamp "racecheck exit $?"
grep -E "passed|failed" "$O/fused-merge-tests.log" "$O/conformance.log" | tail -4
tail -2 "$O/memcheck.log" "$O/racecheck.log"
python3 - "$O" <<'PY'
import csv, sys
rows = {}
for run in ("b1-kernel", "b1-fused", "b1-before"):
    try:
        for r in csv.DictReader(open(f"{sys.argv[1]}/{run}/results.csv")):
            if r["status"] == "PASS":
                rows.setdefault(r["problem"].split()[1] + " " + r["problem"].split()[2], {})[f"{r['backend']}/{r['algorithm']}@{run}"] = r["median_us"]
    except FileNotFoundError:
        print("missing", run)
for p, d in rows.items():
    print(p, " ".join(f"{k.replace('@b1-', '@')}={v}" for k, v in sorted(d.items())))
PY
