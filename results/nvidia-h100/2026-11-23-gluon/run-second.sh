#!/usr/bin/env bash
# Second GPU run: the failing split-invariance draw replayed against the oracle, a launch-config
# sweep of the Gluon kernels on scripts/sweep.py's cells, and the Gluon conformance suite.
# On the device machine: OUT=<folder> bash results/nvidia-h100/2026-11-23-gluon/run-second.sh
set -uo pipefail
OUT=${OUT:-runs/gluon-second}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.
timeout 120 python3 results/nvidia-h100/2026-11-23-gluon/debug_split.py > "$OUT/debug_split.log" 2>&1
echo "debug exit $?"; tail -6 "$OUT/debug_split.log"
timeout ${SWEEP_S:-260} python3 scripts/sweep.py gluon --quick --all > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; grep -v "^    " "$OUT/sweep.log" | tail -12
DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=${EXAMPLES:-10} timeout ${CONF_S:-180} \
  python3 -m pytest conformance -q -p no:cacheprovider -k gluon -W ignore::DeprecationWarning \
  > "$OUT/conformance.log" 2>&1; echo "conformance exit $?"
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/conformance.log" | tail -12
