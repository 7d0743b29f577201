#!/usr/bin/env bash
# First look at issue 14's changes on the GPU (an exploration, before the committed run): the
# conformance suite on the changed kernels and launchers, then Triton beside FA3, FlashInfer and
# cuDNN on explore.json (the grid's batch-1, 16- and 64-sequence cells, the ragged batches and the
# scheduling ones), cold L2. On the device machine, FlashInfer and FA3 wheels installed:
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash results/nvidia-h100/2026-11-24-plan/run-explore.sh
set -uo pipefail
HERE=results/nvidia-h100/2026-11-24-plan
FINAL=${OUT:-runs/plan-explore}
OUT=$(mktemp -d)  # everything lands here, then one archive in $FINAL (the device returns 8 files)
mkdir -p "$FINAL"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  echo "commit ${DECODE_BENCH_COMMIT:-unset}"; } > "$OUT/env.txt" 2>&1
DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=${EXAMPLES:-5} timeout ${CONF_S:-240} \
  python3 -m pytest conformance -q -n 8 -p no:cacheprovider -W ignore::DeprecationWarning \
  -k "triton or plan or ((cupy or numba or gluon) and split)" > "$OUT/conformance.log" 2>&1
echo "conformance exit $?"
timeout ${RUN_S:-300} python3 -m harness run --backends triton,flash_attn3,flashinfer,torch-cudnn \
  --workload-file $HERE/explore.json --timing cold --out "$OUT/explore" > "$OUT/explore.log" 2>&1
echo "explore exit $?"
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/conformance.log" | tail -8
sed -n '/== side by side ==/,$p' "$OUT/explore.log" | cut -c1-160
tar czf "$FINAL/explore.tgz" -C "$OUT" . && echo "archive: $(du -h "$FINAL/explore.tgz" | cut -f1)"
