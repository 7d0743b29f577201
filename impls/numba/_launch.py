"""Host side of the Numba backend: tile choice, zero-copy views, launch on PyTorch's stream.

``config_for(problem)`` is the pure choice of compile-time parameters. ``plan`` turns one
problem's tensors into kernel launches: on a GPU the kernels get ``cuda.as_cuda_array`` views
of PyTorch's memory (through ``__cuda_array_interface__``; no copy, no sync) made once in
``prepare``, and ``run()`` launches on PyTorch's current stream. In the simulator they get numpy
views of the CPU tensors (``Tensor.numpy()`` shares memory; the simulator copies arrays in and
out of its fake device around each launch, which is not a performance figure anyway).
"""

from __future__ import annotations

import contextlib
import functools
import sys

import numpy as np
import torch

from impls import heuristics
from impls.numba._compat import SIMULATOR, cuda
from impls.numba._kernels import LOG2E, OUT_FLOAT32, OUT_KINDS, WORD_BYTES, Config, build

NUM_WARPS = 8  # 256 threads per block on the GPU
# Launch bounds asking for MIN_BLOCKS blocks per SM (<= 128 registers a thread at 8 warps) when
# a thread's q and accumulator are small enough to fit without spilling (CAP_STATE_FLOATS each;
# Llama's group of 4 at head_dim 128 is 32); larger states keep the compiler's own choice, and
# so does fp16, whose exact conversion needs a few registers more (capped, paged fp16 spilled
# 64 bytes: tests/test_numba_sm90.py checks every specialisation for spills).
MIN_BLOCKS = 2
CAP_STATE_FLOATS = 32
LOADS_PER_STEP = 4  # 8-byte K (and as many V) words per thread per loop step: UNROLL x WPT
REGISTER_FLOATS = 64  # q (and as many accumulator) floats per thread before TPR doubles
MAX_GROUP_PER_BLOCK = 8  # query heads per block; larger GQA groups are split into chunks
SMEM_LIMIT = 48 * 1024  # static shared memory of one block (the cross-warp merge)
# The simulator runs every thread as a Python thread, polled by a busy loop that costs ~100 ms
# per block of 64 threads before any work: one warp (the cross-warp merge runs with one warp;
# the GPU runs it with 4-8), 4 lanes per row (two shuffle levels in the loop), 2 rows per row
# group: 16 tokens a step, so the conformance suite's short CI sequences take several steps.
SIM_NUM_WARPS, SIM_TPR, SIM_UNROLL = 1, 4, 2
# Python's default thread switch interval (5 ms) makes each simulated barrier wait for it
# several times; a shorter one while a simulated kernel runs cuts CI time about in half.
SIM_SWITCH_INTERVAL_S = 5e-4


def config_for(problem, out_kind: int | None = None, tpr: int | None = None,
               unroll: int | None = None, num_warps: int | None = None,
               min_blocks: int | None = None, simulator: bool = SIMULATOR) -> Config:
    """Compile-time parameters for ``problem`` (pure). Threads per row: half the power of two
    covering the row's words, so each lane takes two words, unless the GQA group's q and
    accumulator would then exceed REGISTER_FLOATS per thread (then one word per lane). Warps:
    NUM_WARPS, halved until the cross-warp merge fits the shared memory (group 8 at head_dim
    256 takes 4). Explicit values are taken as given (``ValueError`` when they cannot work)."""
    epw = WORD_BYTES // problem.itemsize
    words = problem.head_dim // epw
    group = min(problem.group_size, MAX_GROUP_PER_BLOCK)
    natural = min(32, 1 << (words - 1).bit_length())
    if simulator:
        default_tpr, default_warps = min(SIM_TPR, natural), SIM_NUM_WARPS
    else:
        default_tpr, default_warps = natural, NUM_WARPS
        if natural > 1 and group * -(-words // (natural // 2)) * epw <= REGISTER_FLOATS:
            default_tpr = natural // 2
    tpr = tpr or default_tpr
    if num_warps is None:
        num_warps = default_warps
        while num_warps > 1 and merge_smem_bytes(num_warps, group, problem.head_dim) > SMEM_LIMIT:
            num_warps //= 2
    wpt = -(-words // tpr)
    if unroll is None:
        unroll = SIM_UNROLL if simulator else max(1, LOADS_PER_STEP // wpt)
    if tpr not in (1, 2, 4, 8, 16, 32) or unroll < 1 or num_warps < 1:
        raise ValueError(f"tpr={tpr}, unroll={unroll}, num_warps={num_warps}: tpr must be a "
                         "power of two <= 32, unroll and num_warps >= 1")
    if merge_smem_bytes(num_warps, group, problem.head_dim) > SMEM_LIMIT:
        raise ValueError(f"{num_warps} warps x {group} heads x head_dim {problem.head_dim}: the "
                         f"merge needs more than {SMEM_LIMIT} bytes of shared memory")
    return Config(head_dim=problem.head_dim, group=group, dtype=problem.dtype,
                  paged=problem.layout == "paged",
                  out_kind=OUT_KINDS[problem.dtype] if out_kind is None else out_kind,
                  tpr=tpr, unroll=unroll, num_warps=num_warps,
                  min_blocks=min_blocks if min_blocks is not None
                  else MIN_BLOCKS if group * wpt * epw <= CAP_STATE_FLOATS
                  and problem.dtype != "float16" else 0)


def merge_smem_bytes(num_warps: int, group: int, head_dim: int) -> int:
    """Static shared memory of the cross-warp merge: acc, m and l of every warp and head."""
    return num_warps * group * (head_dim + 2) * 4


def num_chunks(problem) -> int:
    return -(-problem.group_size // MAX_GROUP_PER_BLOCK)


def check_alignment(inputs) -> str | None:
    """Why the 8-byte word loads cannot be used on these tensors, if they cannot."""
    for name in ("q", "k", "v"):
        t = getattr(inputs, name)
        if t.data_ptr() % WORD_BYTES or t.stride(-1) != 1 or any(
                s * t.element_size() % WORD_BYTES for s in t.stride()[:-1]):
            return f"{name} rows are not 8-byte aligned (the kernels load 8-byte words)"
    return None


def words(t: torch.Tensor) -> torch.Tensor:
    """The same memory as int64 words along the last dimension (zero-copy)."""
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


@functools.cache
def _external_stream(handle: int):
    """Numba's handle on a PyTorch stream, made once per stream (graph capture uses its own)."""
    return cuda.external_stream(handle)


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
        stream = _external_stream(torch.cuda.current_stream().cuda_stream)
        for kernel, grid, block, args in launches:
            kernel[grid, block, stream](*args)
    return run


def plan(inputs, out: torch.Tensor, lse: torch.Tensor, num_splits: int | None,
         **tile) -> tuple[list, dict]:
    """Launches for one problem: ``num_splits=None`` is the one-pass kernel writing out/lse;
    otherwise ``num_splits`` token ranges of ``split_len`` tokens each write float32 partials,
    then the combine kernel. Returns (launches, config to report)."""
    p = inputs.problem
    paged = p.layout == "paged"
    table = inputs.block_table if paged else inputs.seq_lens.view(-1, 1)  # never read when dense
    q, k, v = (device_array(words(t)) for t in (inputs.q, inputs.k, inputs.v))
    common = (device_array(inputs.seq_lens), device_array(table))
    scalars = (num_chunks(p), p.group_size, p.page_size if paged else 1)
    qk_scale = np.float32(p.scale * LOG2E)
    out4 = device_array(out.unsqueeze(2))
    lse3 = device_array(lse.unsqueeze(2))
    if num_splits is None:
        c = config_for(p, **tile)
        decode, _ = build(c)
        grid = (p.num_kv_heads * num_chunks(p), p.batch, 1)
        launches = [(decode, grid, c.threads,
                     (q, k, v, *common, out4, lse3, *scalars, p.max_seq_len, qk_scale))]
        return launches, _report(c)
    c = config_for(p, out_kind=OUT_FLOAT32, **tile)
    final = config_for(p, **tile)
    decode, _ = build(c)
    _, combine = build(final)
    split_len = heuristics.tokens_per_split(p, num_splits, c.step)
    part_out = torch.empty(p.batch, p.num_q_heads, num_splits, p.head_dim, dtype=torch.float32,
                           device=inputs.q.device)
    part_lse = torch.empty(p.batch, p.num_q_heads, num_splits, dtype=torch.float32,
                           device=inputs.q.device)
    po, pl = device_array(part_out), device_array(part_lse)
    grid = (p.num_kv_heads * num_chunks(p), p.batch, num_splits)
    launches = [
        (decode, grid, c.threads, (q, k, v, *common, po, pl, *scalars, split_len, qk_scale)),
        (combine, (p.num_q_heads, p.batch), final.threads, (po, pl, out4, lse3, num_splits)),
    ]
    # the partials live as long as the launches: numba's views keep their tensors referenced
    return launches, {**_report(c), "num_splits": num_splits, "tokens_per_split": split_len}


def _report(c: Config) -> dict:
    return {"GROUP": c.group, "TPR": c.tpr, "UNROLL": c.unroll, "WARPS": c.num_warps}
