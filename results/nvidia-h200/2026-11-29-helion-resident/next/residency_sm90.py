"""Helion split kernels compiled for sm_90 on the CPU (no GPU): ptxas registers, shared memory and
the programs an SM they leave (planner.residency), for each problem of the workload files given:
    TRITON_INTERPRET=0 python results/nvidia-h200/2026-11-29-helion-resident/next/residency_sm90.py FILE.json ...
"""
import os, re, subprocess, sys, tempfile, json
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../../.."))  # the repository
sys.path.insert(0, ROOT)
os.chdir(ROOT)
import tests.triton_sm90 as t
from tests.sm90_tools import triton_tool
import triton
from triton.compiler import ASTSource, make_backend
from triton.runtime.jit import JITFunction, create_function_from_signature
from specs.problem import DecodeProblem
from specs.inputs import make_inputs
from impls import registry, plan as planner
JITFunction.run = t._record
tb = make_backend(t.HOPPER)
for f in sys.argv[1:]:
    for d in json.load(open(f)):
        p = DecodeProblem.from_dict(d)
        # the kernel's code does not depend on the lengths (static shapes aside): short ones compile the same
        t.captured.clear()
        inputs = make_inputs(p.replace(seq_lens=tuple(min(s, 64) for s in p.seq_lens)), seed=0, device="cpu")
        impl = next(i for i in registry.all_impls() if i.backend.name == "helion" and i.algorithm == "split-k")
        t.prepared(impl, inputs, None).run()
        fn, args, kwargs = next(c for c in t.captured if "split" in c[0].__name__)
        binder = create_function_from_signature(fn.signature, fn.params, tb)
        bound, spec, options = binder(*args, **kwargs)
        options, signature, constexprs, attrs = fn._pack_args(tb, kwargs, bound, spec, options)
        k = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=t.HOPPER, options=options.__dict__)
        with tempfile.TemporaryDirectory() as tmp:
            open(tmp + "/k.ptx", "w").write(k.asm["ptx"])
            log = subprocess.run([triton_tool("ptxas"), "-v", "--gpu-name=sm_90a", tmp + "/k.ptx", "-o", tmp + "/k.o"], capture_output=True, text=True).stderr
        regs = int(re.search(r"Used (\d+) registers", log)[1])
        print(p.label(), "regs", regs, "shared", k.metadata.shared, "resident", planner.residency(regs, k.metadata.shared, kwargs.get("num_warps", 4)), flush=True)
