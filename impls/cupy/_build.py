"""Compile-time configuration, compilation and zero-copy launch plumbing of the CuPy backend.

Kernel sources are the ``.cu`` files beside this module (``decode_common.cuh`` holds the shared
device code). ``pick_launch_config(problem)`` is the pure choice of compile-time parameters;
``get_kernel`` compiles a source with them through NVRTC (``cupy.RawModule``) once per
specialisation and caches the module. Tensors reach the kernels as CuPy views of PyTorch's
memory (``cupy.from_dlpack``; 16-bit types as int16 views, since CuPy has no bfloat16), and
launches go on PyTorch's current stream.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from impls import common
from impls.common import check_thread_mapping, on_torch_stream, threads_per_row, with_overrides
from specs.problem import ProblemError

HERE = Path(__file__).resolve().parent
DTYPE_IDS = {"float16": 0, "bfloat16": 1, "float32": 2}
NUM_WARPS = 4  # 128 threads per CTA
UNROLL = 4  # tokens per row group per step: 2 x UNROLL 16-byte loads in flight per thread
PREFETCH = 1  # issue the next step's loads before this step's arithmetic
SMEM_LIMIT = 48 * 1024  # static shared memory of one CTA (the cross-warp merge)
REGISTER_FLOATS = 64  # per thread for q (and as many for the accumulator): no spills at 128 threads
MAX_BLOCK_H = 8  # query heads per CTA; larger GQA groups are split into blocks of 8
LOAD_BYTES = 16  # one vectorised load per thread per row


def pick_launch_config(problem, config: dict | None = None) -> dict[str, int]:
    """-D values for ``problem`` (pure); ``config`` overrides the tunable ones (``TPR``,
    ``UNROLL``, ``NUM_WARPS``, ``PREFETCH``), a ``ProblemError`` when they cannot work.

    Threads per row: ``common.threads_per_row`` (two 16-byte vectors a thread where the
    registers allow; the faster choice in results/nvidia-h200/sweeps/2026-11-21-cupy.log).
    UNROLL tokens x VPT vectors stay at UNROLL loads per thread per step, so the K/V buffers
    fit in registers."""
    vec = LOAD_BYTES // problem.itemsize
    vecs_per_row = problem.head_dim // vec
    block_h = min(problem.group_size, MAX_BLOCK_H)
    tuned = with_overrides(dict(TPR=threads_per_row(vecs_per_row, vec, block_h, REGISTER_FLOATS),
                                UNROLL=None, NUM_WARPS=NUM_WARPS, PREFETCH=PREFETCH), config)
    tpr, num_warps = tuned["TPR"], tuned["NUM_WARPS"]
    vpt = -(-vecs_per_row // tpr)
    unroll = max(1, UNROLL // vpt) if tuned["UNROLL"] is None else tuned["UNROLL"]
    check_thread_mapping(tpr, unroll, num_warps)
    if tuned["PREFETCH"] not in (0, 1):
        raise ProblemError(f"config: PREFETCH={tuned['PREFETCH']}: must be 0 or 1")
    if num_warps * block_h * problem.head_dim * 4 > SMEM_LIMIT:
        raise ProblemError(f"config: {num_warps} warps x {block_h} heads x head_dim "
                           f"{problem.head_dim} floats exceed the shared memory of the merge")
    return dict(HEAD_DIM=problem.head_dim, BLOCK_H=block_h, DTYPE_ID=DTYPE_IDS[problem.dtype],
                IS_PAGED=int(problem.layout == "paged"), VEC=vec, TPR=tpr, VPT=vpt,
                NUM_WARPS=num_warps, UNROLL=unroll, PREFETCH=tuned["PREFETCH"])


def step_tokens(defines: dict[str, int]) -> int:
    """Tokens one CTA consumes per loop step (row groups x UNROLL): STEP in the kernels."""
    return defines["NUM_WARPS"] * (32 // defines["TPR"]) * defines["UNROLL"]


def num_head_blocks(problem) -> int:
    return common.num_head_blocks(problem, MAX_BLOCK_H)


def source(name: str) -> str:
    """``name`` with the shared header inlined, so CuPy's on-disk cache keys on all the code."""
    text = (HERE / name).read_text()
    common = (HERE / "decode_common.cuh").read_text()
    return re.sub(r'#include "decode_common.cuh"', lambda _: common, text)


NVRTC_OPTIONS = ("--std=c++17", "--use_fast_math")


@functools.cache
def _module(name: str, defines: tuple[tuple[str, int], ...]):
    import cupy

    options = NVRTC_OPTIONS + tuple(f"-D{k}={v}" for k, v in defines)
    return cupy.RawModule(code=source(name), options=options)


def get_kernel(name: str, function: str, defines: dict[str, int]):
    return _module(name, tuple(sorted(defines.items()))).get_function(function)


def view(tensor):
    """Zero-copy CuPy view of a CUDA tensor (16-bit floats as int16: the kernels read raw bits)."""
    import cupy
    import torch

    if tensor.dtype in (torch.float16, torch.bfloat16):
        tensor = tensor.view(torch.int16)
    return cupy.from_dlpack(tensor)


def _cupy_stream(handle: int):
    import cupy

    return cupy.cuda.ExternalStream(handle)


current_stream = on_torch_stream(_cupy_stream)


def launcher(launches, defines: dict[str, int]):
    """``run()`` that launches ``[(kernel, grid, args), ...]`` in order on PyTorch's current
    stream, ``NUM_WARPS`` warps per CTA."""
    block = (defines["NUM_WARPS"] * 32,)

    def run():
        with current_stream():
            for kernel, grid, args in launches:
                kernel(grid, block, args)

    return run


REPORTED = ("BLOCK_H", "TPR", "UNROLL", "NUM_WARPS")  # what Launch.config records


def reported(defines: dict[str, int]) -> dict[str, int]:
    return {key: defines[key] for key in REPORTED}
