"""Registers, SASS lines and a hash of the PTX's code lines of every one-pass kernel the launch
rules pick for the 8 model shapes (both layouts, batch 1 and 128, q_len 1 and 8) and three held-out
shapes of two row blocks a KV head, compiled for sm_90a on the CPU (tests/triton_sm90.py's path).
With --cap, also: the programs a SM holds by registers and by shared memory, the register budget of
one program more, and the bytes ptxas spills under that budget (--maxrregcount).
    TRITON_INTERPRET=0 python regs.py TREE triton|gluon ABSOLUTE_OUT.json [--cap]"""
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

root, backend, out = sys.argv[1:4]
CAP = "--cap" in sys.argv[4:]
REGS_PER_SM, SMEM_PER_SM, SMEM_RESERVED = 65536, 228 * 1024, 1024  # sm_90
sys.path.insert(0, root)
os.chdir(root)
sys.argv = ["x", "spills", backend]  # what tests/triton_sm90.py reads at import
import triton  # noqa: E402
import tests.triton_sm90 as sm90  # noqa: E402
from impls import common  # noqa: E402
from specs.problem import DecodeProblem  # noqa: E402
from specs.workloads import MODELS  # noqa: E402

common.sm_count = lambda device: 132  # an H100's, for the rules' waves
BIN = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
found = []


def code_lines(ptx: str) -> str:
    """The PTX's code, not where it came from (file paths, line numbers, labels, debug sections)."""
    ptx = ptx.split("\t.section\t.debug")[0]
    return "\n".join(line for line in ptx.splitlines()
                     if not line.strip().startswith((".loc", ".file", "//", "$L__", "Lfunc")))


def record(ptx: str) -> int:  # stands in for sm90.ptxas_spills: compile_all calls it per kernel
    src = os.path.join(tempfile.gettempdir(), f"k-{os.getpid()}.ptx")
    with open(src, "w") as f:
        f.write(ptx)
    log = subprocess.run([os.path.join(BIN, "ptxas"), "-v", "--gpu-name=sm_90a", src, "-o", src[:-4] + ".cubin"],
                         capture_output=True, text=True, check=True).stderr
    sass = subprocess.run([os.path.join(BIN, "cuobjdump"), "-sass", src[:-4] + ".cubin"],
                          capture_output=True, text=True).stdout
    regs = int(re.findall(r"Used (\d+) registers", log)[0])
    found.append((regs, sass.count("\n        /*"), hashlib.sha1(code_lines(ptx).encode()).hexdigest()[:12])
                 + (capped(src, regs, int(re.search(r"\.(?:maxntid|reqntid) (\d+)", ptx).group(1))) if CAP else ()))
    return 0


def capped(src: str, regs: int, threads: int) -> tuple:
    """(programs a SM holds by registers, the budget of one more, bytes ptxas spills under it)."""
    per_sm = REGS_PER_SM // (-(-regs // 8) * 8 * threads)  # registers are allocated 8 a thread at a time
    budget = REGS_PER_SM // ((per_sm + 1) * threads) // 8 * 8
    log = subprocess.run([os.path.join(BIN, "ptxas"), "-v", "--gpu-name=sm_90a", f"--maxrregcount={budget}", src,
                          "-o", src[:-4] + "-cap.cubin"], capture_output=True, text=True, check=True).stderr
    return per_sm, budget, sum(int(n) for n in re.findall(r"(\d+) bytes spill stores", log))


sm90.ptxas_spills = record
problems = [DecodeProblem(hq, hkv, d, (64,) * batch, layout=layout, q_len=q, name=name)
            for name, (hq, hkv, d) in MODELS.items() for layout in ("dense", "paged")
            for batch in (1, 128) for q in (1, 8)]
problems += [DecodeProblem(120, 8, 64, (28,) * 8, q_len=8),
             DecodeProblem(104, 8, 112, (300,) * 8, q_len=8, dtype="float16"),
             DecodeProblem(96, 8, 208, (300, 900), layout="paged", page_size=2, q_len=8)]
lines = sm90.compile_all(problems, backend, algorithms=("one-pass",), spills=True)
if CAP:  # the line's shared memory: the programs a SM holds by it
    found = [r + (SMEM_PER_SM // (int(re.search(r"shared=(\d+)", line).group(1)) + SMEM_RESERVED),)
             for line, r in zip(lines, found)]
json.dump([[line.split(" shared=")[0], r] for line, r in zip(lines, found)], open(out, "w"))
