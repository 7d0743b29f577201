#!/usr/bin/env bash
# Tuning sweep of Gluon's TMA rings (BLOCK_N x NUM_STAGES x num_warps, and the cp.async ring at
# its default shape) on five dense cells. On the device machine:
#     OUT=<folder> bash results/nvidia-h100/2026-11-24-gluon-tma/run-sweep.sh
set -uo pipefail
OUT=${OUT:-runs/gluon-tma-sweep}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.
timeout ${SWEEP_S:-480} python3 scripts/sweep.py gluon --quick --all --cells ${CELLS:-0,2,3,4,6} \
  > "$OUT/sweep-gluon-tma.log" 2>&1; echo "sweep exit $?"
grep -E "best|WRONG|skip" "$OUT/sweep-gluon-tma.log" | cut -c1-330
