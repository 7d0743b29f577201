"""Every Triton and Gluon kernel compiles for sm_90 (no GPU needed), the 16-bit attention kernels
put both products on the tensor cores (mma in the PTX), and Gluon's copy K/V by TMA (dense) or
cp.async (gathered), so a syntax, type or layout error is caught in CI rather than on the GPU
(Gluon has no interpreter: this is all of it the CPU can check)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("backend", ["triton", "gluon"])
def test_all_kernels_compile_for_sm90(backend):
    res = subprocess.run([sys.executable, "-m", "tests.triton_sm90", backend], cwd=ROOT, text=True,
                         capture_output=True, timeout=900, env={**os.environ, "TRITON_INTERPRET": "0"})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    lines = res.stdout.splitlines()
    names = {line.split()[0] for line in lines}
    assert names == {"decode_kernel", "split_kernel", "combine_kernel"}
    attention = [l for l in lines if not l.startswith("combine") and ("*bf16" in l or "*fp16" in l)]
    assert attention and all("mma=True" in l for l in attention), "\n".join(attention)
    if backend == "gluon":  # the explicit ring: dense tiles by TMA, gathered ones by cp.async
        tma = [l for l in attention if "'IS_PAGED': False" in l and "'DENSE_TMA': 1" in l]
        gathered = [l for l in attention if l not in tma]
        assert tma and all("tma=True" in l and "cp.async=False" in l for l in tma), "\n".join(tma)
        assert gathered and all("cp.async=True" in l and "tma=False" in l for l in gathered), \
            "\n".join(gathered)
        # the per-row table lookups (a page size neither dividing nor divided by the tile) and a
        # deeper ring compile too
        assert any("'IS_PAGED': True" in l and "'PAGE_SIZE': 0" in l for l in attention)
        assert any("'NUM_STAGES': 3" in l for l in attention)
