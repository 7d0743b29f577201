#!/usr/bin/env bash
# `python -m harness ...` with the Python the two commands set up (.venv, or a python3 that has
# everything): scripts/harness.sh list | run ... | report RUN | compare OLD NEW | replay CASES.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
exec "$PY" -m harness "$@"
