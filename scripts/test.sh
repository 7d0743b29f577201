#!/usr/bin/env bash
# The tests: install what is missing, then the linter (ruff, configured in pyproject.toml), the
# unit tests (tests/) and the conformance suite (conformance/). On a CPU the 'ci' hypothesis
# profile applies (about 15 minutes on 2 cores); on a GPU the 'gpu' profile. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
NEED='import torch, triton, numba_cuda, numpy, hypothesis, pytest, matplotlib, ruff'
source scripts/env.sh
"$PY" -m ruff check .
exec "$PY" -m pytest "$@"
