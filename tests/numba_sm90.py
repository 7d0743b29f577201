"""Compile every Numba kernel specialisation the launchers ask for to sm_90 PTX, no GPU needed.

Run as ``NUMBA_ENABLE_CUDASIM=0 python -m tests.numba_sm90 OUTDIR`` (test_numba_sm90.py does).
The real ``launches_for()`` runs on CPU tensors with numpy views in place of ``cuda.as_cuda_array`` and
a recorder in place of the launcher, so the argument types are the ones a GPU launch passes;
each kernel is then compiled by numba-cuda (NVVM, via the ``nvrtc``/``nvvm`` packages of the
``numba`` extra) for compute capability 9.0. numba-cuda asks the current device for the
compute capability of device functions; without a GPU this script answers 9.0 itself.
Writes OUTDIR/<n>.ptx and prints one line per kernel: index, name, the Config, and counts of
local-memory accesses, float64 instructions, shuffles and fp16 conversions in the PTX.
"""

import os
import sys
from pathlib import Path

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "0":
    sys.exit("run with NUMBA_ENABLE_CUDASIM=0 (compile, do not simulate)")

import numba  # noqa: E402
import torch  # noqa: E402

from impls.numba import _compat  # noqa: E402  (the numpy alias first)
import numba.cuda.dispatcher as dispatcher  # noqa: E402

from impls import plan as planner  # noqa: E402
from impls.numba import _launch  # noqa: E402
from specs.inputs import make_inputs  # noqa: E402
from specs.problem import DecodeProblem  # noqa: E402

CC = (9, 0)


class _Hopper:
    compute_capability = CC


dispatcher.get_current_device = lambda: _Hopper()  # device functions compile for sm_90
_launch.device_array = lambda t: (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()

PROBLEMS = [DecodeProblem(32, 8, 128, (100,), layout=layout, dtype=dtype)
            for dtype in ("bfloat16", "float16", "float32") for layout in ("dense", "paged")]
PROBLEMS += [DecodeProblem(hq, hkv, d, (100,), dtype=dtype) for hq, hkv, d, dtype in [
    (28, 4, 64, "bfloat16"),  # GQA 7, head_dim 64
    (32, 32, 96, "float16"),  # MHA, head_dim 96: 24 words on 16 lanes
    (16, 8, 256, "bfloat16"),  # head_dim 256
    (16, 1, 256, "float32"),  # MQA 16 (two chunks of 8), fp32 head_dim 256
    (16, 2, 192, "bfloat16"),  # GQA 8 at head_dim 192: the merge's shared memory near 48 KB
    (12, 2, 256, "float16"),  # GQA 6 at head_dim 256, fp16 (no launch bounds)
    (36, 4, 64, "float16"),  # GQA 9: two blocks of 5 and 4 heads
    (28, 2, 128, "float16"),  # GQA 14: two blocks of 7
]]
PROBLEMS += [  # fp8 caches: 8 elements a word, decoded in registers; the scales' two layouts
    DecodeProblem(32, 8, 128, (100,), layout="paged", kv_dtype="float8_e4m3fn", kv_scale="head"),
    DecodeProblem(32, 8, 128, (100,), dtype="float16", kv_dtype="float8_e5m2"),
    DecodeProblem(16, 2, 256, (100,), kv_dtype="float8_e4m3fn", kv_scale="head"),  # GQA 8, d 256
]


def main(outdir: Path) -> None:
    assert not _compat.SIMULATOR
    outdir.mkdir(parents=True, exist_ok=True)
    seen = set()
    for p in PROBLEMS:
        inputs = make_inputs(p, 0)
        out = torch.empty(p.batch, p.num_q_heads, p.head_dim, dtype=inputs.q.dtype)
        lse = torch.empty(p.batch, p.num_q_heads, dtype=torch.float32)
        for split_plan in (planner.whole_sequences(p.seq_lens),
                           planner.plan(p.seq_lens, p.num_kv_heads, 4, 16, num_splits=4)):
            splits = split_plan.num_items
            launches, _ = _launch.launches_for(inputs, out, lse,
                                               planner.SplitLaunch.of(split_plan, inputs))
            for kernel, _grid, _block, args in launches:
                sig = tuple(numba.typeof(a) for a in args)
                key = (kernel.py_func.__qualname__, id(kernel), sig)
                if key in seen:
                    continue
                seen.add(key)
                bounds = kernel.targetoptions.get("launch_bounds")
                ptx, _ = numba.cuda.compile_ptx(kernel.py_func, sig, cc=CC, launch_bounds=bounds)
                n = len(seen)
                (outdir / f"{n}.ptx").write_text(ptx)
                local = sum(op in line for line in ptx.splitlines()
                            for op in ("ld.local", "st.local"))
                f64 = sum(".f64" in line for line in ptx.splitlines())
                print(n, kernel.py_func.__name__, p.label().replace(" ", "_"), f"items={splits}",
                      f"local={local} f64={f64} shfl={ptx.count('shfl.sync')}",
                      f"cvt16={ptx.count('cvt.f32.f16')}", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
