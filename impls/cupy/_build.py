"""Compile-time configuration, compilation and zero-copy launch plumbing of the CuPy backend.

Kernel sources are the ``.cu`` files beside this module (``decode_common.cuh`` holds the shared
device code). ``kernel_defines(problem)`` is the pure choice of compile-time parameters;
``get_kernel`` compiles a source with them through NVRTC (``cupy.RawModule``) once per
specialisation and caches the module. Tensors reach the kernels as CuPy views of PyTorch's
memory (``cupy.from_dlpack``; 16-bit types as int16 views, since CuPy has no bfloat16), and
launches go on PyTorch's current stream.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
DTYPE_IDS = {"float16": 0, "bfloat16": 1, "float32": 2}
NUM_WARPS = 4  # 128 threads per CTA
UNROLL = 4  # tokens per row group per step: 2 x UNROLL 16-byte loads in flight per thread
PREFETCH = 1  # issue the next step's loads before this step's arithmetic
SMEM_LIMIT = 48 * 1024  # static shared memory of one CTA (the cross-warp merge)
REGISTER_FLOATS = 64  # per thread for q (and as many for the accumulator): no spills at 128 threads
MAX_GROUP_PER_CTA = 8  # query heads per CTA; larger GQA groups are split into chunks of 8
LOAD_BYTES = 16  # one vectorised load per thread per row
LOG2E = 1.4426950408889634  # 1/ln(2): q is pre-scaled so scores come out in log2 units


def kernel_defines(problem, threads_per_row: int | None = None, unroll: int | None = None,
                   num_warps: int = NUM_WARPS, prefetch: int = PREFETCH) -> dict[str, int]:
    """-D values for ``problem`` (pure).

    Threads per row: half the power of two covering the row's 16-byte vectors, so each thread
    takes two vectors (one shuffle level less per score; scripts/sweep.py on an H200: 151 us
    against 156 us at 64 x 2048, 77.5 against 79.9 at 16 x 4096), unless the GQA group's q and
    accumulator would then exceed REGISTER_FLOATS. UNROLL tokens x VPT vectors stay at UNROLL
    loads per thread per step, so the K/V buffers fit in registers."""
    vec = LOAD_BYTES // problem.itemsize
    vecs_per_row = problem.head_dim // vec
    group = min(problem.group_size, MAX_GROUP_PER_CTA)
    natural = min(32, 1 << (vecs_per_row - 1).bit_length())
    tpr = threads_per_row or natural
    if threads_per_row is None and natural > 1:
        half = natural // 2
        if group * -(-vecs_per_row // half) * vec <= REGISTER_FLOATS:
            tpr = half
    vpt = -(-vecs_per_row // tpr)
    unroll = unroll or max(1, UNROLL // vpt)
    if num_warps * group * problem.head_dim * 4 > SMEM_LIMIT:
        raise ValueError(f"{num_warps} warps x {group} heads x head_dim {problem.head_dim} "
                         "floats exceed the shared memory of the merge")
    return dict(HEAD_DIM=problem.head_dim, GROUP=group, DTYPE_ID=DTYPE_IDS[problem.dtype],
                IS_PAGED=int(problem.layout == "paged"), VEC=vec, TPR=tpr,
                VPT=vpt, NUM_WARPS=num_warps, UNROLL=unroll, PREFETCH=prefetch)


def step_tokens(defines: dict[str, int]) -> int:
    """Tokens one CTA consumes per loop step (row groups x UNROLL)."""
    return defines["NUM_WARPS"] * (32 // defines["TPR"]) * defines["UNROLL"]


def num_chunks(problem) -> int:
    return -(-problem.group_size // MAX_GROUP_PER_CTA)


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


def launcher(launches, defines: dict[str, int]):
    """``run()`` that launches ``[(kernel, grid, args), ...]`` in order on PyTorch's current
    stream, ``NUM_WARPS`` warps per CTA."""
    import torch

    block = (defines["NUM_WARPS"] * 32,)

    def run():
        with _external_stream(torch.cuda.current_stream().cuda_stream):
            for kernel, grid, args in launches:
                kernel(grid, block, args)

    return run


@functools.cache
def _external_stream(handle: int):
    """CuPy's handle on a PyTorch stream, made once per stream (graph capture uses its own)."""
    import cupy

    return cupy.cuda.ExternalStream(handle)


def check_alignment(inputs) -> str | None:
    """Why the 16-byte vector loads cannot be used on these tensors, if they cannot."""
    for name in ("q", "k", "v"):
        t = getattr(inputs, name)
        if t.data_ptr() % LOAD_BYTES or t.stride(-1) != 1 or any(
                s * t.element_size() % LOAD_BYTES for s in t.stride()[:-1]):
            return f"{name} rows are not 16-byte aligned (the kernels load 16 bytes per thread)"
    return None
