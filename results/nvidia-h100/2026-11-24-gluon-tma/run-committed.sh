#!/usr/bin/env bash
# The committed comparison at the final kernels and defaults (one-pass: cp.async ring; split-K:
# TMA for dense tiles): the Gluon conformance suite (gpu profile), Gluon beside Triton on grid and
# ragged with empty JIT caches (the first call is the compilation), then Gluon's dense problems
# again with every dense tile by cp.async (DENSE_TMA=0) and by TMA (DENSE_TMA=1), the ablation.
# On the device machine:
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash results/nvidia-h100/2026-11-24-gluon-tma/run-committed.sh
set -uo pipefail
FINAL=${OUT:-runs/gluon-tma-committed}
OUT=$(mktemp -d)  # everything lands here, then one archive in $FINAL (the device returns 8 files)
mkdir -p "$FINAL"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  echo "commit ${DECODE_BENCH_COMMIT:-unset}"; } > "$OUT/env.txt" 2>&1
DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=${EXAMPLES:-10} timeout ${CONF_S:-170} \
  python3 -m pytest conformance -q -p no:cacheprovider -k gluon -W ignore::DeprecationWarning \
  > "$OUT/conformance.log" 2>&1; echo "conformance exit $?"
timeout ${RUN_S:-200} python3 -m harness run --backends gluon,triton --workloads grid,ragged \
  --timing cold --fresh-caches --out "$OUT/run" > "$OUT/harness.log" 2>&1; echo "harness exit $?"
for tma in 0 1; do
  timeout ${ABL_S:-100} python3 -m harness run --backends gluon --workloads grid,ragged --timing cold \
    --variants dense,split-k --config "{\"DENSE_TMA\": $tma}" --out "$OUT/tma$tma" \
    > "$OUT/tma$tma.log" 2>&1; echo "DENSE_TMA=$tma exit $?"
done
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/conformance.log" | tail -8
sed -n '/== side by side ==/,$p' "$OUT/harness.log" | cut -c1-150
tar czf "$FINAL/committed.tgz" -C "$OUT" . && echo "archive: $(du -h "$FINAL/committed.tgz" | cut -f1)"
