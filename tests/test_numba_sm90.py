"""Every Numba kernel specialisation compiles for sm_90 (no GPU needed): a typing or lowering
error is caught in CI, not on the GPU. ptxas then checks what makes the kernels fast: no local
memory (a per-thread array that was not promoted to registers, or spilled), no float64
arithmetic (a silently widened expression), warp shuffles in the attention kernel, and static
shared memory within the 48 KB a kernel may declare."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba_cuda")
ROOT = Path(__file__).resolve().parent.parent
PTXAS = shutil.which("ptxas")
STATIC_SMEM_LIMIT = 48 * 1024  # a kernel's static shared memory (more needs dynamic + opt-in)


def test_all_numba_kernels_compile_for_sm90(tmp_path):
    res = subprocess.run([sys.executable, "-m", "tests.numba_sm90", str(tmp_path)], cwd=ROOT,
                         text=True, capture_output=True, timeout=1200,
                         env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    lines = res.stdout.splitlines()
    assert {line.split()[1] for line in lines} == {"decode_kernel", "combine_kernel"}, res.stdout
    for line in lines:
        assert "local=0 f64=0" in line, line
        if line.split()[1] == "decode_kernel":
            assert "shfl=0" not in line, line
            # fp16 (queries, or e5m2 K/V: the top byte of an fp16) by the hardware's conversion
            # (cvt.f32.f16), not ten integer and float instructions an element
            halves = "_fp16 " in line or "kv-e5m2" in line
            assert ("cvt16=0" not in line) == halves, line
    if PTXAS is None:
        pytest.fail("ptxas not on PATH: CUDA's compiler tools are part of this project's set-up")
    for ptx in sorted(tmp_path.glob("*.ptx")):
        res = subprocess.run([PTXAS, "-arch=sm_90", "-v", str(ptx), "-o", os.devnull],
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        spills = [int(n) for n in re.findall(r"(\d+) bytes spill stores", res.stderr)]
        frames = [int(n) for n in re.findall(r"(\d+) bytes stack frame", res.stderr)]
        assert spills and not any(spills) and not any(frames), (ptx.name, res.stderr)
        smem = [int(n) for n in re.findall(r"(\d+) bytes smem", res.stderr)]
        assert all(n <= STATIC_SMEM_LIMIT for n in smem), (ptx.name, res.stderr)
