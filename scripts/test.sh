#!/usr/bin/env bash
# The tests: install what is missing, then the linter (ruff, configured in pyproject.toml), the
# unit tests (tests/) and the conformance suite (conformance/). On a CPU the 'ci' hypothesis
# profile applies (about 20 minutes on 2 cores); on a GPU the 'gpu' profile. Arguments go to pytest;
# --quick first: 3 drawn examples per property instead of 15 (a first look, not the CI run).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--quick" ]; then shift; export DECODE_BENCH_EXAMPLES=3; fi
NEED='import torch, triton, numba_cuda, numpy, hypothesis, pytest, matplotlib'
source scripts/env.sh
# ruff is not in NEED: a machine's python3 with everything else (a GPU image) stays the one used
ruff_pin=$(grep -o '"ruff==[^"]*"' pyproject.toml | tr -d '"')  # the test extra's pin
"$PY" -m ruff --version >/dev/null 2>&1 || "$PY" -m pip install -q --disable-pip-version-check \
  "$ruff_pin" || echo "warning: $ruff_pin not installable here: the lint is skipped" >&2
if "$PY" -m ruff --version >/dev/null 2>&1; then "$PY" -m ruff check .; fi
exec "$PY" -m pytest "$@"
