"""Whether Triton 3.6 warp-specializes the wide 532.15 program for sm_90 (no GPU needed).

From the repository root, after changing ``attend_range``'s loop in impls/triton/_common.py to
``tl.range(start, end, BLOCK_N, warp_specialize=True)``:
    TRITON_INTERPRET=0 PYTHONPATH=. python results/nvidia-h200/2026-11-28-wide-drafts/ws_probe.py
Prints, per compiled kernel, whether its PTX holds ``setmaxnreg`` and ``mbarrier`` (what a
warp-specialized kernel has) and its shared memory, then tests/triton_sm90.py's line for it.
"""
import sys

sys.argv = ["ws_probe", "x", "triton"]
import triton  # noqa: E402

import tests.triton_sm90 as sm90  # noqa: E402
from impls import common  # noqa: E402
from specs.problem import DecodeProblem  # noqa: E402

common.L2_BYTES = 0  # the K/V beyond L2, as on the GPU for this problem: the wide-row rule
common.sm_count = lambda device: 132
compile_ = triton.compile


def compile_and_report(src, target=None, options=None):
    kernel = compile_(src, target=target, options=options)
    ptx = kernel.asm["ptx"]
    print(f"setmaxnreg={'setmaxnreg' in ptx} mbarrier={'mbarrier' in ptx} "
          f"shared={kernel.metadata.shared}")
    return kernel


sm90.triton.compile = compile_and_report
problem = DecodeProblem(72, 8, 208, (2927,) * 46, layout="paged", page_size=2, q_len=8)
for line in sm90.compile_all([problem], "triton", algorithms=("one-pass",), spills=True):
    print(line)
