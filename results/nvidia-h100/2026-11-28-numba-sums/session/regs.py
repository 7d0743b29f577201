"""Registers and spills of Numba's decode kernel under launch configs, by ptxas, on the CPU.
    NUMBA_ENABLE_CUDASIM=0 PYTHONPATH=. python results/nvidia-h100/2026-11-28-numba-sums/session/regs.py \
        '{"401.19": [{"NUM_WARPS": 4, "MIN_BLOCKS": 3, "TPR": 32, "UNROLL": 2}]}'
(keys SEED.INDEX of specs.workloads.heldout_problems; configs in the kernel's own names).
"""
import json
import subprocess
import sys
import tempfile

import tests.numba_sm90  # noqa: F401  (sm_90 device functions without a GPU)
import numba
import torch

from impls import plan as planner
from impls.numba import _launch
from specs import workloads
from specs.inputs import make_inputs


def regs(p, config):
    p = p.replace(seq_lens=(100,) * min(p.batch, 4))
    inputs = make_inputs(p, 0)
    out = torch.empty(p.batch, p.num_q_heads, p.head_dim, dtype=inputs.q.dtype)
    lse = torch.empty(p.batch, p.num_q_heads, dtype=torch.float32)
    split = planner.plan(p.seq_lens, p.num_kv_heads, 4, 16, num_splits=2)
    launches, rep = _launch.launches_for(inputs, out, lse, planner.SplitLaunch.of(split, inputs), config)
    kernel, _grid, _block, args = launches[0]
    sig = tuple(numba.typeof(a) for a in args)
    ptx, _ = numba.cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0),
                                    launch_bounds=kernel.targetoptions.get("launch_bounds"))
    with tempfile.TemporaryDirectory() as d:
        open(f"{d}/k.ptx", "w").write(ptx)
        r = subprocess.run(["ptxas", "-arch=sm_90", "-O3", "-v", f"{d}/k.ptx", "-o", f"{d}/k.cubin"],
                           capture_output=True, text=True)
    return rep, " | ".join(x.split(":")[-1].strip() for x in r.stderr.splitlines()
                           if "registers" in x or "spill" in x)


for key, configs in json.loads(sys.argv[1]).items():
    seed, idx = map(int, key.split("."))
    p = workloads.heldout_problems(seed)[idx]
    for c in configs:
        rep, info = regs(p, c or None)
        print(key, p.label(), c, rep, info, flush=True)
