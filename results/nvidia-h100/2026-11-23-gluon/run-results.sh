#!/usr/bin/env bash
# The committed comparison: the failing draw of the first run replayed under the corrected fp16
# bound, the Gluon conformance suite (gpu profile), then Gluon beside Triton on grid and ragged
# with empty JIT caches (the first call is the compilation). On the device machine:
#     OUT=<folder> bash results/nvidia-h100/2026-11-23-gluon/run-results.sh
set -uo pipefail
OUT=${OUT:-runs/gluon-results}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  git rev-parse HEAD 2>/dev/null; } > "$OUT/env.txt" 2>&1
timeout 100 python3 results/nvidia-h100/2026-11-23-gluon/debug_split.py > "$OUT/debug_split.log" 2>&1
DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=${EXAMPLES:-10} timeout ${CONF_S:-170} \
  python3 -m pytest conformance -q -p no:cacheprovider -k gluon -W ignore::DeprecationWarning \
  > "$OUT/conformance.log" 2>&1; echo "conformance exit $?"
timeout ${RUN_S:-300} python3 -m harness run --backends gluon,triton --workloads grid,ragged \
  --timing cold --fresh-caches --out "$OUT/run" > "$OUT/harness.log" 2>&1; echo "harness exit $?"
cat "$OUT/debug_split.log"
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/conformance.log" | tail -8
sed -n '/== side by side ==/,$p' "$OUT/harness.log" | cut -c1-150
