"""Can numba-cuda's extension API reach the tensor cores? Compiles (for sm_90, no GPU) one kernel
whose @intrinsic emits mma.sync.m16n8k16 (bf16, fp32 accumulators) two ways and prints what
NVVM made of each:
  1. a call to LLVM's NVPTX intrinsic llvm.nvvm.mma.m16n8k16.row.col.bf16;
  2. inline PTX (llvmlite's builder.asm), as CUDA C's asm() passes it.
From the repository root: NUMBA_ENABLE_CUDASIM=0 PYTHONPATH=. python <this file>"""
import os
import sys

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "0":
    sys.exit("run with NUMBA_ENABLE_CUDASIM=0 (compile, do not simulate)")

import numpy as np  # noqa: E402

from impls.numba import _compat  # noqa: E402,F401  (the numpy alias first)
import numba  # noqa: E402
from llvmlite import ir  # noqa: E402
from numba import types  # noqa: E402
from numba.cuda.extending import intrinsic  # noqa: E402

MMA = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
NAME = "llvm.nvvm.mma.m16n8k16.row.col.bf16"
F32, I32 = ir.FloatType(), ir.IntType(32)
RESULT = ir.LiteralStructType([F32] * 4)
FNTY = ir.FunctionType(RESULT, [I32] * 6 + [F32] * 4)
SIG = types.UniTuple(types.float32, 4)(*[types.int32] * 6, *[types.float32] * 4)


def make(how):
    @intrinsic
    def mma(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        def codegen(context, builder, signature, args):
            if how == "intrinsic":
                fn = builder.module.globals.get(NAME) or ir.Function(builder.module, FNTY, NAME)
                r = builder.call(fn, args)
            else:
                r = builder.asm(FNTY, MMA + " {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};",
                                "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", list(args), False)
            return context.make_tuple(builder, signature.return_type,
                                      [builder.extract_value(r, i) for i in range(4)])
        return SIG, codegen

    def kernel(a, out):
        z = np.float32(0)
        d = mma(a[0], a[1], a[2], a[3], a[4], a[5], z, z, z, z)
        for i in range(4):
            out[i] = d[i]
    return kernel


for how in ("intrinsic", "inline PTX"):
    try:
        ptx, _ = numba.cuda.compile_ptx(make(how), (types.int32[::1], types.float32[::1]), cc=(9, 0))
        print(f"{how}: compiles; PTX: {[line.strip() for line in ptx.splitlines() if 'mma' in line]}")
    except Exception as e:  # noqa: BLE001  (what NVVM says is the finding)
        print(f"{how}: refused: {type(e).__name__}: {str(e).splitlines()[-1] if str(e) else ''}")
