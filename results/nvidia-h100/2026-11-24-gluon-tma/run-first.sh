#!/usr/bin/env bash
# First GPU run of Gluon's TMA dense path and compiled-residency planning: a smoke check (small
# problems of every shape class), the Gluon conformance suite (gpu profile), then grid timing,
# Gluon beside Triton, and Gluon's dense cells again with DENSE_TMA=0 (the cp.async ring).
# On the device machine: DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash <this file>
set -uo pipefail
OUT=${OUT:-runs/gluon-tma-first}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  echo "commit ${DECODE_BENCH_COMMIT:-unset}"; } > "$OUT/env.txt" 2>&1
timeout 150 python3 -m harness run --backends gluon --workloads cpu --no-timing --out "$OUT/smoke" \
  > "$OUT/smoke.log" 2>&1; echo "smoke exit $?"
tail -8 "$OUT/smoke.log" | cut -c1-160
DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=${EXAMPLES:-10} timeout ${CONF_S:-170} \
  python3 -m pytest conformance -q -p no:cacheprovider -k gluon -W ignore::DeprecationWarning \
  > "$OUT/conformance.log" 2>&1; echo "conformance exit $?"
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/conformance.log" | tail -8
timeout ${GRID_S:-200} python3 -m harness run --backends gluon,triton --workloads grid --timing cold \
  --out "$OUT/grid" > "$OUT/grid.log" 2>&1; echo "grid exit $?"
timeout ${ABL_S:-120} python3 -m harness run --backends gluon --variants dense --workloads grid \
  --timing cold --config '{"DENSE_TMA": 0}' --out "$OUT/grid-cpasync" > "$OUT/grid-cpasync.log" 2>&1
echo "cp.async exit $?"
sed -n '/== side by side ==/,$p' "$OUT/grid.log" | cut -c1-150 | head -70
grep -E "^\| llama|dense" "$OUT/grid-cpasync.log" | cut -c1-150 | tail -25
