#!/usr/bin/env bash
# The main job: install what is missing, then run conformance + timing on whatever this machine
# has (CPU: the small 'cpu' workload through the interpreters; GPU: the default grid).
# Arguments go to `python -m harness run` (see `python -m harness run --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
exec "$PY" -m harness run "$@"
