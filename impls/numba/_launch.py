"""Host side of the Numba backend: launch configuration, zero-copy views, launch on PyTorch's
stream.

``pick_launch_config(problem)`` is the pure choice of compile-time parameters. ``plan`` turns one
problem's tensors into kernel launches: on a GPU the kernels get ``cuda.as_cuda_array`` views
of PyTorch's memory (through ``__cuda_array_interface__``; no copy, no sync) made once in
``prepare``, and ``run()`` launches on PyTorch's current stream. In the simulator they get numpy
views of the CPU tensors (``Tensor.numpy()`` shares memory; the simulator copies arrays in and
out of its fake device around each launch, which is not a performance figure anyway).
"""

from __future__ import annotations

import contextlib
import sys

import numpy as np
import torch

from impls import common
from impls import plan as planner
from impls.common import (LOG2E, cache_args, check_thread_mapping, on_torch_stream,
                          threads_per_row, with_overrides)
from impls.numba._compat import SIMULATOR, cuda
from impls.numba._kernels import LOAD_BYTES, OUT_KINDS, Config, build
from impls.registry import Unsupported
from specs.problem import ProblemError

NUM_WARPS = 8  # 256 threads per block on the GPU
# Launch bounds asking for MIN_BLOCKS blocks per SM (<= 128 registers a thread at 8 warps) when
# a thread's q and accumulator are small enough to fit without spilling (CAP_STATE_FLOATS each;
# Llama's group of 4 at head_dim 128 is 32); larger states keep the compiler's own choice, and
# so does fp16, whose paged kernel still spills there (tests/test_numba_sm90.py checks every
# specialisation for spills).
MIN_BLOCKS = 2
CAP_STATE_FLOATS = 32
LOADS_PER_STEP = 4  # 8-byte K (and as many V) loads per thread per loop step: UNROLL x VPT
# (an fp8 cache: half as many, for the elements of a 16-bit step)
REGISTER_FLOATS = 64  # q (and as many accumulator) floats per thread before TPR doubles
MAX_BLOCK_H = 8  # query heads per block; larger GQA groups are split into blocks
SMEM_LIMIT = 48 * 1024  # static shared memory of one block (the cross-warp merge)
# The simulator runs every thread as a Python thread, polled by a busy loop that costs ~100 ms
# per block of 64 threads before any work: one warp (the cross-warp merge runs with one warp;
# the GPU runs it with 4-8), 4 lanes per row (two shuffle levels in the loop), 2 rows per row
# group: 16 tokens a step, so the conformance suite's short CI sequences take several steps.
SIM_NUM_WARPS, SIM_TPR, SIM_UNROLL = 1, 4, 2
# Python's default thread switch interval (5 ms) makes each simulated barrier wait for it
# several times; a shorter one while a simulated kernel runs cuts CI time about in half.
SIM_SWITCH_INTERVAL_S = 5e-4


def pick_launch_config(problem, config: dict | None = None, simulator: bool = SIMULATOR) -> Config:
    """Compile-time parameters for ``problem`` (pure); ``config`` overrides the tunable ones
    (``TPR``, ``UNROLL``, ``NUM_WARPS``, ``MIN_BLOCKS``), a ``ProblemError`` when they cannot
    work. Threads per row: ``common.threads_per_row`` (two 8-byte vectors a lane where the
    registers allow). Warps: NUM_WARPS, halved until the cross-warp merge fits the shared memory
    (a block of 8 heads at head_dim 256 takes 4)."""
    vec = LOAD_BYTES // problem.kv_itemsize
    vecs_per_row = problem.head_dim // vec
    # an fp8 row takes the lanes and the elements a step of a 16-bit row of its head_dim (the
    # floats in registers the budgets were set for), in half the words
    row_vec = min(vec, LOAD_BYTES // 2)
    # the group's heads in as few blocks as MAX_BLOCK_H allows, split evenly: every head of a
    # block costs its FMAs whether real or padding (GQA 9: blocks of 5 and 4, not 8 and 8)
    block_h = -(-problem.group_size // num_head_blocks(problem))
    if simulator:
        tpr, num_warps = min(SIM_TPR, 1 << (vecs_per_row - 1).bit_length()), SIM_NUM_WARPS
    else:
        tpr = threads_per_row(problem.head_dim // row_vec, row_vec, block_h, REGISTER_FLOATS)
        num_warps = NUM_WARPS
        while num_warps > 1 and merge_smem_bytes(num_warps, block_h, problem.head_dim) > SMEM_LIMIT:
            num_warps //= 2
    tuned = with_overrides(dict(TPR=tpr, UNROLL=None, NUM_WARPS=num_warps, MIN_BLOCKS=None), config)
    tpr, num_warps, unroll = tuned["TPR"], tuned["NUM_WARPS"], tuned["UNROLL"]
    vpt = -(-vecs_per_row // tpr)
    if unroll is None:
        unroll = SIM_UNROLL if simulator else max(1, LOADS_PER_STEP * row_vec // (vpt * vec))
    check_thread_mapping(tpr, unroll, num_warps)
    if merge_smem_bytes(num_warps, block_h, problem.head_dim) > SMEM_LIMIT:
        raise ProblemError(f"config: {num_warps} warps x {block_h} heads x head_dim "
                           f"{problem.head_dim}: the merge needs more than {SMEM_LIMIT} bytes of "
                           "shared memory")
    min_blocks = tuned["MIN_BLOCKS"]
    if min_blocks is None:
        small = block_h * vpt * vec <= CAP_STATE_FLOATS and problem.dtype != "float16"
        min_blocks = MIN_BLOCKS if small else 0
    return Config(HEAD_DIM=problem.head_dim, BLOCK_H=block_h, DTYPE=problem.dtype,
                  KV_DTYPE=problem.cache.storage_dtype(problem.query),
                  IS_PAGED=problem.layout == "paged",
                  OUT_KIND=OUT_KINDS[problem.dtype],
                  TPR=tpr, UNROLL=unroll, NUM_WARPS=num_warps, MIN_BLOCKS=min_blocks)


def require_whole_words(problem) -> None:
    """Raise ``Unsupported`` when a K/V row is not a whole number of 8-byte words: an fp8 row
    whose head_dim is not a multiple of 8 (the Capabilities' multiple, 4, is the 16-bit one)."""
    vec = LOAD_BYTES // problem.kv_itemsize
    if problem.head_dim % vec:
        raise Unsupported(f"head_dim {problem.head_dim} with a {problem.kv_dtype} cache: the "
                          f"kernels read K/V rows in 8-byte words of {vec} elements")


def merge_smem_bytes(num_warps: int, block_h: int, head_dim: int) -> int:
    """Static shared memory of the cross-warp merge: acc, m_i and l_i of every warp and head."""
    return num_warps * block_h * (head_dim + 2) * 4


def num_head_blocks(problem) -> int:
    return common.num_head_blocks(problem, MAX_BLOCK_H)


def as_vectors(t: torch.Tensor) -> torch.Tensor:
    """The same memory as int64 words (8-byte vectors) along the last dimension (zero-copy)."""
    return t.view(torch.int64)


def device_array(t: torch.Tensor):
    """What the kernels take for ``t``: a numba view of the same memory (bf16 as int16 bits)."""
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    if SIMULATOR:
        return t.numpy()
    return cuda.as_cuda_array(t)


@contextlib.contextmanager
def _short_switch_interval():
    previous = sys.getswitchinterval()
    sys.setswitchinterval(SIM_SWITCH_INTERVAL_S)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


current_stream = on_torch_stream(lambda handle: cuda.external_stream(handle))


def launcher(launches):
    """``run()`` launching ``[(kernel, grid, block, args), ...]`` in order on PyTorch's current
    stream (in the simulator: synchronously, on the CPU)."""
    if SIMULATOR:
        def run():
            with _short_switch_interval():
                for kernel, grid, block, args in launches:
                    kernel[grid, block](*args)
        return run

    def run():
        stream = current_stream()
        for kernel, grid, block, args in launches:
            kernel[grid, block, stream](*args)
    return run


def launches_for(inputs, out: torch.Tensor, lse: torch.Tensor, split: planner.SplitLaunch,
                 config: dict | None = None) -> tuple[list, dict]:
    """Launches for one problem over ``split``'s work items (the one-pass launcher's plan is
    one item per sequence): the attention kernel, then, if anything was split, the combine
    kernel. Returns (launches, config to report)."""
    p = inputs.problem
    table, _, page_size = cache_args(inputs)
    q, k, v = (device_array(as_vectors(t)) for t in (inputs.q, inputs.k, inputs.v))
    c = pick_launch_config(p, config)
    decode_kernel, combine_kernel = build(c)
    split_plan, work = split.plan, split.tensors
    part_out, part_lse = split.part_out, split.part_lse
    out_, lse_, po, pl = (device_array(t) for t in (out, lse, part_out, part_lse))
    qk_scale = np.float32(p.scale * LOG2E)
    scales = common.kv_scale_args(inputs)
    k_scale, v_scale, scale_stride = (scales["k_scale_ptr"], scales["v_scale_ptr"],
                                      scales["scale_stride"])
    grid = (p.num_kv_heads * num_head_blocks(p), split_plan.num_items)
    launches = [(decode_kernel, grid, c.NUM_THREADS,
                 (q, k, v, device_array(work["items"]), device_array(table), out_, lse_, po, pl,
                  num_head_blocks(p), p.group_size, page_size, qk_scale, device_array(k_scale),
                  device_array(v_scale), scale_stride))]
    if split_plan.num_merges:
        launches.append((combine_kernel, (p.num_q_heads, split_plan.num_merges), c.NUM_THREADS,
                         (po, pl, device_array(work["merge_seqs"]),
                          device_array(work["merge_indptr"]), out_, lse_)))
    # numba's views keep the workspace's tensors referenced as long as the launches live
    return launches, reported(c)


REPORTED = ("BLOCK_H", "TPR", "UNROLL", "NUM_WARPS", "MIN_BLOCKS")  # what Launch.config records


def reported(c: Config) -> dict:
    return {key: getattr(c, key) for key in REPORTED}
