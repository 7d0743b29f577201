# Sourced by scripts/run.sh and scripts/test.sh: sets PY to a Python that has what the project
# needs, installing what is missing. A python3 that already has torch, triton, numpy, hypothesis
# and pytest (the GPU machine's image, say) is used as it is; otherwise a virtual environment
# .venv is created and filled. torch is pinned to 2.13.0: on this workplace's CPU machines pip
# takes it from a local CPU-only wheel (a bare "torch" would pull gigabytes of CUDA packages).
# scripts/cpu-constraints.txt pins what the CPU interpreters need (see the comments there).
# NEED: the imports that must work (scripts/test.sh adds matplotlib, which the report tests plot with).
need=${NEED:-'import torch, triton, numba_cuda, numpy, hypothesis, pytest'}
if [ -z "${PY:-}" ] && python3 -c "$need" 2>/dev/null; then
  PY=python3
elif [ -z "${PY:-}" ]; then
  [ -x .venv/bin/python ] || python3 -m venv .venv
  PY=.venv/bin/python
  if ! "$PY" -c "$need" 2>/dev/null; then
    echo "installing into .venv (first run only)..." >&2
    "$PY" -m pip install -q --disable-pip-version-check "torch==2.13.0"
    "$PY" -m pip install -q --disable-pip-version-check -c scripts/cpu-constraints.txt -e ".[triton,numba,test]"
  fi
fi
export PY
