#!/usr/bin/env bash
# The GPU verification run: conformance suite (gpu profile), then the harness on the default grid.
# On the device machine (nothing to install there: torch, triton, hypothesis are in its image):
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash scripts/gpu_check.sh [harness run options]
# CONFORMANCE_K=<pytest -k expression> limits the conformance part (e.g. "flash_attn3 or
# flashinfer"); DECODE_BENCH_EXAMPLES=N sets the drawn examples per property (default 20).
# Logs and result files go to $OUT (default runs/gpu-check); the last lines printed are the tables.
set -uo pipefail
OUT=${OUT:-runs/gpu-check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
  "$PY" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  echo "conformance selection: ${CONFORMANCE_K:-all}, examples: ${DECODE_BENCH_EXAMPLES:-profile default}"
} 2>&1 | tee "$OUT/conformance.log"
start=$(date +%s)
DECODE_BENCH_PROFILE=gpu "$PY" -m pytest conformance -q -p no:cacheprovider --durations=15 \
  ${CONFORMANCE_K:+-k "$CONFORMANCE_K"} -W ignore::DeprecationWarning \
  2>&1 | tee -a "$OUT/conformance.log"
conformance_rc=${PIPESTATUS[0]}
echo "conformance exit code $conformance_rc after $(( $(date +%s) - start )) s" | tee -a "$OUT/conformance.log"
"$PY" -m harness run --out "$OUT/run" "$@" 2>&1 | tee "$OUT/harness.log"
harness_rc=${PIPESTATUS[0]}
echo "conformance exit code $conformance_rc, harness exit code $harness_rc"
exit $(( conformance_rc || harness_rc ))
