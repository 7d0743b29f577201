#!/usr/bin/env bash
# The tests: install what is missing, then the linter (ruff, configured in pyproject.toml), the
# unit tests (tests/) and the conformance suite (conformance/). On a CPU the 'ci' hypothesis
# profile applies (about 20 minutes on 2 cores); on a GPU the 'gpu' profile. Arguments go to pytest;
# --quick first: 3 drawn examples per property instead of 10 (a first look, not the CI run).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--quick" ]; then shift; export DECODE_BENCH_EXAMPLES=3; fi
NEED='import torch, triton, numba_cuda, numpy, hypothesis, pytest, matplotlib'
source scripts/env.sh
# The tile DSLs' CPU tests (tests/test_helion.py, tests/test_tilelang.py) and the Ray executor's
# (tests/test_ray.py) need their packages: installed where missing and installable. TileLang pins
# apache-tvm-ffi<0.1.13, which would break FlashInfer and flash-attn-4: never beside them (README:
# "Backends in environments of their own").
for extra in helion tilelang ray; do
  "$PY" -c "import $extra" 2>/dev/null && continue
  if [ $extra = tilelang ] && "$PY" -c "import importlib.metadata as m, sys
sys.exit(not any(next(iter(m.distributions(name=n)), None) for n in ('flashinfer-python', 'flash-attn-4')))"; then
    echo "note: tilelang not installed beside flashinfer/flash-attn-4: its CPU tests are skipped" >&2; continue
  fi
  "$PY" -m pip install -q --disable-pip-version-check -c scripts/cpu-constraints.txt -e ".[$extra]" \
    || echo "warning: the $extra extra is not installable here: its CPU tests are skipped" >&2
done
# The report page's browser test (tests/test_html.py) needs Selenium and a Chromium with its
# driver: Selenium where missing; the browser (Debian's packages) only where asked for with
# DECODE_BENCH_INSTALL_BROWSER=1 (.ci/run does) and this runs as root; else that test says it skipped
"$PY" -c "import selenium" 2>/dev/null || "$PY" -m pip install -q --disable-pip-version-check \
  "selenium>=4.20" || echo "warning: selenium not installable here: the browser test is skipped" >&2
if [ "${DECODE_BENCH_INSTALL_BROWSER:-0}" = 1 ] && ! command -v chromedriver >/dev/null && \
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  { apt-get install -y -q chromium chromium-driver || { apt-get update -q && \
    apt-get install -y -q chromium chromium-driver; }; } >/dev/null 2>&1 \
    || echo "warning: chromium not installable here: the browser test is skipped" >&2
fi
# ruff is not in NEED: a machine's python3 with everything else (a GPU image) stays the one used
ruff_pin=$(grep -o '"ruff==[^"]*"' pyproject.toml | tr -d '"')  # the test extra's pin
"$PY" -m ruff --version >/dev/null 2>&1 || "$PY" -m pip install -q --disable-pip-version-check \
  "$ruff_pin" || echo "warning: $ruff_pin not installable here: the lint is skipped" >&2
if "$PY" -m ruff --version >/dev/null 2>&1; then "$PY" -m ruff check .; fi
# pytest-xdist spreads the tests over the machine's cores (the interpreters and nvcc are CPU-bound
# and single-threaded); DECODE_BENCH_TEST_WORKERS=0 runs them in this process. Tests marked
# exclusive (a Ray cluster every worker would share; counts kept in the process) run after, in one.
"$PY" -c "import xdist" 2>/dev/null || "$PY" -m pip install -q --disable-pip-version-check \
  "pytest-xdist>=3.5" || echo "warning: pytest-xdist not installable here: the tests run in one process" >&2
workers=()
if "$PY" -c "import xdist" 2>/dev/null; then workers=(-n "${DECODE_BENCH_TEST_WORKERS:-auto}"); fi
status=0
"$PY" -m pytest "${workers[@]}" -m "not exclusive" "$@" || status=$?
"$PY" -m pytest -m exclusive "$@" || { rc=$?; [ $rc = 5 ] || status=$rc; }  # 5: none selected
[ $status = 5 ] && status=0  # every selected test was exclusive
exit $status
