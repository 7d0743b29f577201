#!/usr/bin/env bash
# The main job: install what is missing, then run conformance + timing on whatever this machine
# has (CPU: the small 'cpu' workload through the interpreters; GPU: the default grid). On a GPU
# machine the backends' own packages (the vendor kernels among them) are installed first where a
# package index is reached (python -m harness install; DECODE_BENCH_NO_INSTALL=1 skips it).
# Arguments go to `python -m harness run` (see `python -m harness run --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
if [ -z "${DECODE_BENCH_NO_INSTALL:-}" ] && nvidia-smi -L >/dev/null 2>&1; then
  "$PY" -m harness install || echo "install: not everything installed; the run says what is missing" >&2
fi
exec "$PY" -m harness run "$@"
