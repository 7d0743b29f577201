"""Registers and spill stores of the Triton kernels the rule compiles for held-out problems, for
sm_90a on a machine with no GPU (tests/triton_sm90.py's recorder, then Triton's own ptxas -v).

    TRITON_INTERPRET=0 PYTHONPATH=. python <this file> 428.22 429.0 ...  (from the repository root)

One line a kernel (the combine left out): SEED.INDEX, the problem, the kernel, its tile, ptxas's
registers and spill-store bytes.
"""
import os
import re
import subprocess
import sys
import tempfile

import triton

from specs import workloads
from tests import triton_sm90


def ptxas(ptx: str) -> tuple[list[str], list[str]]:
    exe = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        log = subprocess.run([exe, "-v", "--gpu-name=sm_90a", src, "-o", os.path.join(tmp, "k.o")],
                             capture_output=True, text=True, check=True).stderr
    return re.findall(r"Used (\d+) registers", log), re.findall(r"(\d+) bytes spill stores", log)


seen = []
triton_sm90.ptxas_spills = lambda ptx: (seen.append(ptxas(ptx)), 0)[1]
for item in sys.argv[1:]:
    seed, index = map(int, item.split("."))
    problem = workloads.heldout_problems(seed)[index]
    seen.clear()
    lines = triton_sm90.compile_all([problem], "triton", spills=True)
    for line, (regs, spills) in zip(lines, seen):
        name = line.split(" ")[0]
        if name == "combine_kernel":
            continue
        tile = re.search(r"'BLOCK_N': (\d+)", line).group(1)
        print(f"{seed}.{index} {problem.label()} {name} BLOCK_N={tile} regs={regs} spill={spills}",
              flush=True)
