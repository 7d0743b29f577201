"""Numba's loop in PTX, on the CPU: compiles the decode kernel for sm_90 (tests/numba_sm90.py) on
three problems and prints, for each basic block with more than 20 FMAs (the loop's QK and PV
blocks), its instruction count and the most frequent opcodes (shfl.sync among them).
    NUMBA_ENABLE_CUDASIM=0 PYTHONPATH=. python results/nvidia-h100/2026-11-28-numba-sums/session/ptx_probe.py OUTDIR
How the README's 60 -> 31 and 32 -> 15 shuffles a step were counted (run at c745d6a, then bf86c2e).
"""
import collections
import re
import sys
from pathlib import Path

import tests.numba_sm90 as m
from specs.problem import DecodeProblem

m.PROBLEMS = [
    DecodeProblem(88, 8, 192, (1221,) * 4, layout="paged", page_size=256, dtype="float16"),
    DecodeProblem(88, 8, 224, (222,) * 4, dtype="bfloat16"),
    DecodeProblem(32, 8, 128, (1000,) * 4, dtype="bfloat16"),
]
out = Path(sys.argv[1])
m.main(out)
for ptx in sorted(out.glob("*.ptx"), key=lambda f: int(f.stem)):
    blocks, name, body = [], "entry", []
    for line in ptx.read_text().splitlines():
        s = line.strip()
        label = re.match(r"^(\$L__\w+):", s)
        if label:
            blocks.append((name, body))
            name, body = label.group(1), []
        elif s and s[0] not in "/.{}":
            body.append(s.split()[1] if s.startswith("@") else s.split()[0].rstrip(";"))
    blocks.append((name, body))
    for name, body in blocks:
        ops = collections.Counter(body)
        fma = sum(v for k, v in ops.items() if k.startswith("fma"))
        if fma > 20:
            print(ptx.name, name, len(body), "instructions:", ops.most_common(6))
