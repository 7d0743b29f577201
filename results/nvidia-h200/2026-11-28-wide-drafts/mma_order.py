"""The order of the warpgroup MMAs, their waits and the exponentials in Triton's 128-row program
for sm_90 (no GPU needed): M*n n wgmma issues, W0 a wgmma.wait_group 0, e*n n ex2, c a cp.async
commit or wait, B a bar.sync. From the repository root (branch hyp/triton-qk-ahead for the
next-scores-ahead loop):
    TRITON_INTERPRET=0 PYTHONPATH=. python results/nvidia-h200/2026-11-28-wide-drafts/mma_order.py
"""
import re
import sys

sys.argv = ["mma_order", "x", "triton"]
import triton  # noqa: E402

import tests.triton_sm90 as sm90  # noqa: E402
from impls import common  # noqa: E402
from specs.problem import DecodeProblem  # noqa: E402

common.L2_BYTES = 0  # the K/V beyond L2: the wide-row rule's 128-row program
common.sm_count = lambda device: 132
compile_ = triton.compile
shown = []


def compile_and_show(src, target=None, options=None):
    kernel = compile_(src, target=target, options=options)
    if not shown:
        shown.append(1)
        marks = []
        for line in kernel.asm["ptx"].splitlines():
            op = line.strip()
            if op.startswith("wgmma.mma_async"):
                marks.append("M")
            elif op.startswith("wgmma.wait_group"):
                marks.append("W" + op.split()[1].rstrip(";"))
            elif op.startswith("ex2.approx"):
                marks.append("e")
            elif op.startswith(("cp.async.wait_group", "cp.async.commit")):
                marks.append("c")
            elif op.startswith("bar.sync"):
                marks.append("B")
        text = re.sub(r"e{3,}", lambda m: f"e*{len(m.group())} ", "".join(marks))
        print(re.sub(r"M{2,}", lambda m: f"M*{len(m.group())} ", text))
    return kernel


sm90.triton.compile = compile_and_show
sm90.compile_all([DecodeProblem(120, 8, 208, (815,) * 111, q_len=8)], "triton",
                 algorithms=("one-pass",))
