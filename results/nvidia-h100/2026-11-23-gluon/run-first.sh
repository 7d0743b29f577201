#!/usr/bin/env bash
# First GPU run of the Gluon backend: a smoke check (small problems of every shape class), the
# conformance suite on gluon (gpu profile), then grid timing, Gluon beside Triton. On the device
# machine: OUT=<folder> bash results/nvidia-h100/2026-11-23-gluon/run-first.sh
set -uo pipefail
OUT=${OUT:-runs/gluon-first}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  git rev-parse HEAD 2>/dev/null; } > "$OUT/env.txt" 2>&1
timeout 150 python3 -m harness run --backends gluon --workloads cpu --no-timing --out "$OUT/smoke" \
  > "$OUT/smoke.log" 2>&1; echo "smoke exit $?"
tail -25 "$OUT/smoke.log"
DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=${EXAMPLES:-10} timeout ${CONF_S:-200} \
  python3 -m pytest conformance -q -x -p no:cacheprovider -k gluon -W ignore::DeprecationWarning \
  > "$OUT/conformance.log" 2>&1; echo "conformance exit $?"
tail -15 "$OUT/conformance.log"
timeout ${GRID_S:-200} python3 -m harness run --backends gluon,triton --workloads grid --timing cold \
  --out "$OUT/grid" > "$OUT/grid.log" 2>&1; echo "grid exit $?"
tail -60 "$OUT/grid.log" | cut -c1-200
