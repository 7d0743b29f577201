"""Compile every Triton kernel of impls/triton for sm_90 (Hopper) on a machine with no GPU.

Run as ``TRITON_INTERPRET=0 python -m tests.triton_sm90`` (test_triton_sm90.py does). The real
launchers run on CPU tensors with ``JITFunction.run`` swapped for a recorder, so the argument
types and compile-time constants are exactly what a GPU launch passes; each distinct kernel
specialisation is then compiled by Triton's own compiler for ``GPUTarget("cuda", 90, 32)``.
Prints one line per kernel: name, constants, registers are unknown without a GPU, so the PTX's
use of tensor-core ``mma`` is reported instead.
"""

import os
import sys

if os.environ.get("TRITON_INTERPRET") != "0":
    sys.exit("run with TRITON_INTERPRET=0 (compile, do not interpret)")

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

import impls  # noqa: E402,F401
from impls import registry  # noqa: E402
from specs.inputs import make_inputs  # noqa: E402
from specs.problem import DecodeProblem  # noqa: E402

TYPES = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32",
         torch.int32: "i32", torch.int64: "i64"}
OPTIONS = ("num_warps", "num_stages")
HOPPER_SMEM = 227 * 1024  # shared memory one block may use on sm_90
captured = []


def _record(self, *args, grid, warmup, **kwargs):
    captured.append((self, args, kwargs))


def _type(value) -> str:
    if isinstance(value, torch.Tensor):
        return "*" + TYPES[value.dtype]
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -2**31 <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    raise TypeError(f"no Triton type for {type(value).__name__}")


def compile_all(problems) -> list[str]:
    JITFunction.run = _record
    for problem in problems:
        inputs = make_inputs(problem, seed=0, device="cpu")
        for impl in registry.all_impls():
            if impl.backend.name == "triton" and impl.unsupported(problem) is None:
                out, lse = inputs.new_outputs()
                impl.prepare(inputs, out, lse).run()
    done, report = set(), []
    for fn, args, kwargs in captured:
        kwargs = dict(kwargs)
        options = {k: kwargs.pop(k) for k in OPTIONS if k in kwargs}
        bound = fn.signature.bind(*args, **kwargs).arguments
        constexprs = {p.name: bound[p.name] for p in fn.params if p.is_constexpr}
        signature = {p.name: "constexpr" if p.is_constexpr else _type(bound[p.name])
                     for p in fn.params}
        key = (fn.__name__, tuple(signature.items()), tuple(constexprs.items()), tuple(options.items()))
        if key in done:
            continue
        done.add(key)
        kernel = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs),
                                target=GPUTarget("cuda", 90, 32), options=options)
        mma = "mma" in kernel.asm["ptx"]
        dtype = next(t for t in signature.values() if t.startswith("*") and t != "*i32")
        report.append(f"{fn.__name__} {dtype} {constexprs} {options} shared={kernel.metadata.shared} "
                      f"mma={mma}")
        assert kernel.metadata.shared <= HOPPER_SMEM, f"{fn.__name__} needs {kernel.metadata.shared} B"
    return report


def main() -> None:
    problems = [DecodeProblem(32, 8, 128, (300, 70), layout=layout, dtype=dtype)
                for dtype in ("bfloat16", "float16", "float32") for layout in ("dense", "paged")]
    problems += [DecodeProblem(16, 4, head_dim, (300,), layout=layout)
                 for head_dim in (64, 96, 256) for layout in ("dense", "paged")]
    for line in compile_all(problems):
        print(line)


if __name__ == "__main__":
    main()
