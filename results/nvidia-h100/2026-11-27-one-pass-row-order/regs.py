"""Registers, SASS lines and a hash of the PTX's code lines of every one-pass kernel the launch
rules pick for the 8 model shapes (both layouts, batch 1 and 128, q_len 1 and 8) and three held-out
shapes of two row blocks a KV head, compiled for sm_90a on the CPU (tests/triton_sm90.py's path).
    TRITON_INTERPRET=0 python regs.py TREE triton|gluon OUT.json"""
import os, re, subprocess, sys, json, tempfile
root, backend, out = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, root); os.chdir(root)
sys.argv = ["x", "spills", backend]
import triton
import tests.triton_sm90 as t
from impls import common
common.sm_count = lambda device: 132
from specs.problem import DecodeProblem
from specs.workloads import MODELS
regs = []
def strip(ptx):  # the code, not where it came from (file paths, line numbers, debug sections)
    ptx = ptx.split("\t.section\t.debug")[0]
    return "\n".join(l for l in ptx.splitlines() if not l.strip().startswith((".loc", ".file", "//", "$L__", "Lfunc")))
def ptxas(ptx):
    p = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    src = os.path.join(tempfile.gettempdir(), f"k-{os.getpid()}.ptx"); open(src, "w").write(ptx)
    log = subprocess.run([p, "-v", "--gpu-name=sm_90a", src, "-o", src[:-4] + ".cubin"], capture_output=True, text=True, check=True).stderr
    sass = subprocess.run([os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump"), "-sass", src[:-4] + ".cubin"], capture_output=True, text=True).stdout
    import hashlib
    regs.append((int(re.findall(r"Used (\d+) registers", log)[0]), sass.count("\n        /*"), hashlib.sha1(strip(ptx).encode()).hexdigest()[:12]))
    return 0
t.ptxas_spills = ptxas
probs = []
for name, (hq, hkv, d) in MODELS.items():
    for layout in ("dense", "paged"):
        for batch in (1, 128):
            for q in (1, 8):
                probs.append(DecodeProblem(hq, hkv, d, (64,) * batch, layout=layout, q_len=q, name=name))
probs += [DecodeProblem(120, 8, 64, (28,) * 8, q_len=8), DecodeProblem(104, 8, 112, (300,) * 8, q_len=8, dtype="float16"),
          DecodeProblem(96, 8, 208, (300, 900), layout="paged", page_size=2, q_len=8)]
lines = t.compile_all(probs, backend, algorithms=("one-pass",), spills=True)
json.dump([[l.split(" shared=")[0], r] for l, r in zip(lines, regs)], open(out, "w"))
