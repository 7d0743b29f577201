"""Compile every Triton (or Gluon) kernel of a backend for sm_90 (Hopper) on a machine with no GPU.

Run as ``TRITON_INTERPRET=0 python -m tests.triton_sm90 [triton|gluon]`` (test_triton_sm90.py
does). The real
launchers run on CPU tensors with ``JITFunction.run`` swapped for a recorder, so the argument
types and compile-time constants are exactly what a GPU launch passes; each distinct kernel
specialisation is then compiled by Triton's own compiler for ``GPUTarget("cuda", 90, 32)``.
Prints one line per kernel: name, constants, registers are unknown without a GPU, so the PTX's
use of tensor-core ``mma`` is reported instead, and of ``cp.async`` (asynchronous copies).
"""

import importlib
import os
import sys

if os.environ.get("TRITON_INTERPRET") != "0":
    sys.exit("run with TRITON_INTERPRET=0 (compile, do not interpret)")

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource, make_backend  # noqa: E402
from triton.experimental.gluon._runtime import GluonASTSource  # noqa: E402
from triton.runtime.jit import JITFunction, create_function_from_signature  # noqa: E402

import impls  # noqa: E402,F401
from impls import registry  # noqa: E402
from specs.inputs import make_inputs  # noqa: E402
from specs.problem import DecodeProblem  # noqa: E402

HOPPER = GPUTarget("cuda", 90, 32)
HOPPER_SMEM = 227 * 1024  # shared memory one block may use on sm_90
captured = []


def _record(self, *args, grid, warmup, **kwargs):
    captured.append((self, args, kwargs))


def compile_all(problems, backend: str = "triton") -> list[str]:
    JITFunction.run = _record
    for problem in problems:
        inputs = make_inputs(problem, seed=0, device="cpu")
        for impl in registry.all_impls():
            if impl.backend.name == backend and impl.unsupported(problem) is None:
                out, lse = inputs.new_outputs()  # the module's own prepare: Gluon has no CPU mode
                getattr(importlib.import_module(impl.module), impl.entry)(inputs, out, lse).run()
    target_backend = make_backend(HOPPER)
    done, report = set(), []
    for fn, args, kwargs in captured:
        # what JITFunction.run does before compiling: the same types, constants and the
        # divisibility attributes (16-byte aligned pointers and strides) a GPU launch gets
        binder = create_function_from_signature(fn.signature, fn.params, target_backend)
        bound, specialization, options = binder(*args, **kwargs)
        options, signature, constexprs, attrs = fn._pack_args(target_backend, kwargs, bound,
                                                              specialization, options)
        key = (fn.__name__, str(specialization), str(sorted(kwargs.items())))
        if key in done:
            continue
        done.add(key)
        source = (GluonASTSource if fn.is_gluon() else ASTSource)(fn, signature, constexprs, attrs)
        kernel = triton.compile(source, target=HOPPER, options=options.__dict__)
        ptx = kernel.asm["ptx"]
        named = {fn.params[path[0]].name: value for path, value in constexprs.items()}
        launch = {k: kwargs[k] for k in ("num_warps", "num_stages") if k in kwargs}
        dtype = next(t for t in signature.values() if t.startswith("*") and t != "*i32")
        report.append(f"{fn.__name__} {dtype} {named} {launch} shared={kernel.metadata.shared} "
                      f"mma={'mma' in ptx} cp.async={'cp.async' in ptx}")
        assert kernel.metadata.shared <= HOPPER_SMEM, f"{fn.__name__} needs {kernel.metadata.shared} B"
    return report


def main() -> None:
    problems = [DecodeProblem(32, 8, 128, (300, 70), layout=layout, dtype=dtype)
                for dtype in ("bfloat16", "float16", "float32") for layout in ("dense", "paged")]
    problems += [DecodeProblem(16, 4, head_dim, (300,), layout=layout)
                 for head_dim in (64, 96, 256) for layout in ("dense", "paged")]
    for line in compile_all(problems, sys.argv[1] if len(sys.argv) > 1 else "triton"):
        print(line)


if __name__ == "__main__":
    main()
