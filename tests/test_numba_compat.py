"""numba-cuda 0.30 imports with a numpy that has no ``row_stack`` (numpy 2.5 removed it): the
backend's compatibility alias is applied before numba's import (impls/numba/_compat.py)."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba_cuda")
ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import numpy
if hasattr(numpy, "row_stack"):
    del numpy.row_stack  # as in numpy >= 2.5
import impls.numba._compat as compat
import numba.cuda
assert numpy.row_stack is numpy.vstack
assert compat.cuda is numba.cuda
print("ok", compat.SIMULATOR)
"""


def test_numba_cuda_imports_without_numpy_row_stack():
    res = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, env={"NUMBA_ENABLE_CUDASIM": "1",
                                                      "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split() == ["ok", "True"]


def test_without_the_alias_the_import_fails():
    """The control: the alias is what makes the import work (if numba-cuda stops needing it,
    this fails and the alias can go)."""
    script = SCRIPT.replace("import impls.numba._compat as compat", "import numba.cuda")
    res = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, env={"NUMBA_ENABLE_CUDASIM": "1",
                                                      "PATH": "/usr/bin:/bin"})
    assert res.returncode != 0 and "row_stack" in res.stderr, res.stderr[-2000:]
