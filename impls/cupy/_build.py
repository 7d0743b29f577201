"""Compile-time configuration, compilation and zero-copy launch plumbing of the CuPy backend.

Kernel sources are the ``.cu`` files beside this module; ``decode_common.cuh`` holds the device
code both inner loops share, ``cuda_cores.cuh`` and ``tensor_cores.cuh`` the two loops (fp32 FMAs
on registers; mma.sync fed by a cp.async ring). ``pick_launch_config(problem)`` is the pure
choice of compile-time parameters, the loop included;
``get_kernel`` compiles a source with them through NVRTC (``cupy.RawModule``) once per
specialisation and caches the module. Tensors reach the kernels as CuPy views of PyTorch's
memory (``cupy.from_dlpack``; 16-bit types as int16 views, since CuPy has no bfloat16, fp8 as
uint8), and launches go on PyTorch's current stream.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from impls import common
from impls import plan as planner
from impls.common import SMEM_BYTES as SMEM_PER_CTA  # the most one CTA may have on sm_90
from impls.common import check_thread_mapping, on_torch_stream, threads_per_row, with_overrides
from impls.registry import Unsupported
from specs.problem import ProblemError

HERE = Path(__file__).resolve().parent
# DTYPE_ID / KV_DTYPE_ID codes of the query's and the cache's dtypes (decode_common.cuh)
DTYPE_IDS = {"float16": 0, "bfloat16": 1, "float32": 2, "float8_e4m3fn": 3, "float8_e5m2": 4}
NUM_WARPS = 4  # 128 threads per CTA (the CUDA-core loop)
UNROLL = 4  # tokens per row group per step: 2 x UNROLL 16-byte loads in flight per thread
PREFETCH = 1  # issue the next step's loads before this step's arithmetic
SMEM_LIMIT = 48 * 1024  # shared memory a CTA has without opting in (the CUDA-core loop's merge)
REGISTER_FLOATS = 64  # per thread for q (and as many for the accumulator): no spills at 128 threads
MAX_BLOCK_H = 8  # query rows per CTA of the CUDA-core loop; more (a GQA group x a draft) are split
LOAD_BYTES = 16  # one vectorised load (or cp.async) per thread per row
ITEMS_FIRST = 0  # grid (head blocks, items); 1: (items, head blocks)

# The tensor-core loop (tensor_cores.cuh)
MMA_ROWS = 16  # query rows of a warp: the M rows of mma.m16n8k16 (fewer are zero-padded)
# query rows per CTA: 1, 2 or 4 row tiles of MMA_ROWS, a warp each, so a KV head's rows read
# each K/V tile once (up to 64 rows: a draft of 8 tokens x GQA 8)
MMA_BLOCK_H = (16, 32, 64)
MMA_DTYPES = ("float16", "bfloat16")  # fp32 stays on CUDA cores (tf32 would miss the tolerance)
# Each token slice's ring: STAGES buffers of 16 tokens, NUM_WARPS warps a CTA (a slice per warp
# with one row tile), by the grid's CTAs per SM (ring_shape); 8 x 3 where no rule applies, 4 warps
# where 8 do not fit (head_dim 256)
STAGES = 3
MMA_WARPS = (8, 4, 2)
NUM_SMS = 132  # H100 / H200 SXM: what the pure pick_launch_config assumes (launchers pass the GPU's)
SMEM_PER_SM = 228 * 1024  # sm_90's shared memory per SM (what bounds the tensor-core CTAs)
SMEM_RESERVED = 1024  # per CTA, taken by the system on sm_90
MMA_REGISTERS = 160  # per thread, ptxas's count for the loop at head_dim 128 (156-158 on sm_90)


CUDA_CORE_KEYS = ("TPR", "UNROLL", "PREFETCH")  # config keys of one loop only
TENSOR_CORE_KEYS = ("STAGES", "BLOCK_H")


def tensor_cores_fit(problem) -> bool:
    """Whether the tensor-core loop takes ``problem`` (a 16-bit dtype, head_dim a multiple of
    the mma's k = 16)."""
    return problem.dtype in MMA_DTYPES and problem.head_dim % 16 == 0


def rows_block(problem) -> int:
    """The fewest row tiles that hold the KV head's query rows (q_len x the group), up to 64
    rows a CTA: the largest BLOCK_H that is not padding."""
    rows = problem.q_len * problem.group_size
    return next((b for b in MMA_BLOCK_H if rows <= b), MMA_BLOCK_H[-1])


def mma_block_h(problem, num_sms: int = NUM_SMS, l2_bytes: int = common.L2_BYTES,
                split: bool = False) -> int:
    """The tensor-core loop's default BLOCK_H. The fewest row tiles (``rows_block``) read each
    K/V tile from HBM once for all the rows, where a CTA per tile would read it once per tile
    (run 6's profile, results/nvidia-h100/2026-11-25-spec-decode); but a CTA of more tiles has
    fewer token slices, so each warp's chain is longer. Row tiles of their own CTAs, then, where
    the extra reads cost no HBM bytes or buy idle SMs: where the K/V fit in L2 (the sibling
    CTAs' reads are L2 hits), and, without split-K (whose planner fills the SMs with items),
    halving while the grid leaves more than half the SMs idle."""
    block = rows_block(problem)
    if problem.kv_bytes <= l2_bytes:
        return MMA_ROWS
    if not split:
        pairs = problem.batch * problem.num_kv_heads
        while block > MMA_ROWS and 2 * pairs * common.num_head_blocks(problem, block) < num_sms:
            block //= 2
    return block


def ring_shape(problem, num_sms: int, block_h: int, split: bool = False,
               sharers: int | None = None) -> tuple[int, int]:
    """The tensor-core loop's default (NUM_WARPS, STAGES) for ``problem`` (split-K's kernel where
    ``split``; ``sharers``: its launcher's ``alone_sharers`` of the plan's items), by the one-pass
    grid's
    CTAs per SM (the grid sweep of results/nvidia-h100/2026-11-24-cupy-merge/): up to 2, 8 warps
    (one CTA must carry an SM's share of the bandwidth), 2 stages on paged K/V and 3 dense; more,
    up to what fits of 2-warp x 2-stage CTAs, those, so the whole grid is resident from the start
    (no second wave), if the lengths are near uniform (a 2-warp CTA streams a long sequence, the
    tail of a ragged batch, at a fraction of an SM's bandwidth); else 8 x 3. A CTA of several row
    tiles (``block_h`` rows) has a warp per row tile in each token slice, up to 8 warps: the
    2-warp shape becomes 2 slices of the row tiles' warps (what fits of those counts registers
    too), and 8 warps keep the tokens in flight of 8 slices with more stages of the fewer slices'
    shorter tiles (up to 8). Before all that, split-K's ring for ``sharers`` CTAs an SM
    (``shared_ring``), where its launcher found them (``alone_sharers`` of the plan's items)."""
    if sharers and sharers > 1:
        return shared_ring(block_h)
    tiles = block_h // MMA_ROWS
    ctas = problem.batch * problem.num_kv_heads * common.num_head_blocks(problem, block_h)
    small = planner.residency(MMA_REGISTERS, ring_smem_bytes(problem.head_dim, 2 * tiles, 2,
                                                             problem.kv_itemsize, block_h),
                              2 * tiles)
    near_uniform = planner.near_uniform(problem.seq_lens)

    def deep(stages: int) -> int:  # (stages - 1) tiles of 8 slices in flight: as many tokens
        return min(8, 1 + (stages - 1) * tiles)

    def eight(stages: int) -> tuple[int, int]:
        # where 8 warps' ring of this depth does not fit but a stage less does (16-bit head dims
        # of 144-192), that: as many tokens in flight as 4 warps x 3 stages, twice the warps to
        # issue them (the tuner's pick on seed 104; A/B on seeds 107-110: results/nvidia-h200/
        # 2026-11-27-combine-x4/rules-ab); else pick_launch_config takes the most warps that fit
        if stages > 2 and fitting_warps(problem, stages, block_h, 8) != 8 and \
                fitting_warps(problem, deep(2), block_h, 8) == 8:
            return 8, deep(2)
        return 8, stages

    if ctas <= 2 * num_sms:
        return eight(deep(2 if problem.layout == "paged" else 3))
    if ctas <= small * num_sms and near_uniform:
        return min(8, 2 * tiles), 2
    # a CTA whose sequence would not fill the deep ring (of the warps whose rings fit, as
    # pick_launch_config takes them) gains nothing from its depth: the small ones, several an
    # SM, hide each other's first waits, where no CTA is the grid's tail (Triton's rule too,
    # impls.plan.short_programs, which counts near-uniform one-pass CTAs that read little as
    # well; the held-out batches of hundreds of short sequences:
    # results/nvidia-h200/2026-11-27-closing-x4)
    warps = fitting_warps(problem, deep(3), block_h, MMA_WARPS[0]) or tiles
    if planner.short_programs(problem, ctas, num_sms, 16 * (warps // tiles) * deep(3), split):
        return min(8, 2 * tiles), 2
    return eight(deep(3))


def alone_sharers(problem, programs: int, grid_programs: int, num_sms: int, block_h: int,
                  split: bool = False) -> int:
    """CTAs an SM of split-K's shared ring (``shared_ring``), or 1 for the rule's: shared where
    the rule's ring would leave each CTA alone on its SM with fewer than 8 warps (8 warps' rings do
    not fit even 2 deep: 16-bit head dims above 192, so a CTA of 4 holds the SM's shared memory by
    itself), the plan at one CTA an SM gives ``programs`` CTAs, more than the SMs, and no CTA,
    slowed by the shared ring's residency, becomes the grid's tail
    (``impls.plan.shared_tail_free``; ``grid_programs`` the one-pass grid's). Split-K only: its
    plan cuts items for the CTAs an SM holds; one-pass programs of a uniform batch at head dim 224
    ran 1-5 % slower shared from 336 KiB a program on an H100
    (results/nvidia-h100/2026-11-28-short-bytes), where ``short_programs`` rules."""
    if programs <= num_sms or fitting_warps(problem, 2, block_h, MMA_WARPS[0]) == MMA_WARPS[0]:
        return 1
    sharers = shared_residency(problem, block_h)
    return sharers if planner.shared_tail_free(problem, grid_programs, num_sms, sharers, split) else 1


def shared_ring(block_h: int) -> tuple[int, int]:
    """(NUM_WARPS, STAGES) of a CTA that shares its SM: 2 warps a row tile (2 token slices), 2
    stages, so that 3 CTAs of 16-bit head dims up to 256 hold 6 warps an SM where the rule's
    ring held 4 (two 3-stage CTAs held the same 4 warps and tiles in flight, and doubled long
    sequences' items for nothing: results/nvidia-h200/2026-11-28-heldout441)."""
    return min(MMA_WARPS[0], 2 * (block_h // MMA_ROWS)), 2


def shared_residency(problem, block_h: int) -> int:
    """CTAs of ``shared_ring`` an SM's shared memory holds."""
    warps, stages = shared_ring(block_h)
    ring = ring_smem_bytes(problem.head_dim, warps, stages, problem.kv_itemsize, block_h)
    return max(1, SMEM_PER_SM // (ring + SMEM_RESERVED))


def fitting_warps(problem, stages: int, block_h: int, most: int) -> int | None:
    """The most warps of MMA_WARPS, up to ``most`` and at least a warp per row tile of ``block_h``
    rows, whose tensor-core ring of ``stages`` fits a CTA's shared memory; None where none does."""
    tiles = block_h // MMA_ROWS
    return next((w for w in MMA_WARPS if tiles <= w <= most and
                 ring_smem_bytes(problem.head_dim, w, stages, problem.kv_itemsize, block_h)
                 <= SMEM_PER_CTA), None)


def pick_launch_config(problem, config: dict | None = None, num_sms: int = NUM_SMS,
                       l2_bytes: int = common.L2_BYTES, split: bool = False,
                       sharers: int | None = None) -> dict[str, int]:
    """-D values for ``problem`` on a GPU of ``num_sms`` SMs and ``l2_bytes`` of L2 (pure), for
    split-K's kernel where ``split`` (``sharers``: CTAs an SM, ``ring_shape``); ``config``
    overrides the tunable ones (``TENSOR_CORES``, ``STAGES``, ``NUM_WARPS``, ``BLOCK_H``; the
    CUDA-core loop's ``TPR``, ``UNROLL``, ``PREFETCH``), a ``ProblemError`` when they cannot work,
    ``Unsupported`` for a problem no loop takes."""
    if "MERGE" in (config or {}):  # the launchers take it out first (split_merge)
        raise ProblemError("config: MERGE chooses how split-K merges its pieces, not a -D value")
    kv_dtype = problem.cache.storage_dtype(problem.query)
    if problem.head_dim * problem.kv_itemsize % LOAD_BYTES:
        vec = LOAD_BYTES // problem.kv_itemsize
        raise Unsupported(f"head_dim {problem.head_dim}: {kv_dtype} rows are read in {LOAD_BYTES}-byte "
                          f"vectors of {vec} elements (head_dim % {vec} == 0)")
    tensor_cores = tensor_cores_fit(problem)
    num_warps = NUM_WARPS
    stages = STAGES
    block_h = None
    if tensor_cores and (config or {}).get("TENSOR_CORES", 1):
        block_h = (config or {}).get("BLOCK_H", mma_block_h(problem, num_sms, l2_bytes, split))
        rows = block_h if block_h in MMA_BLOCK_H else MMA_ROWS  # else refused below
        shape_warps, stages = ring_shape(problem, num_sms, rows, split, sharers)
        stages = (config or {}).get("STAGES", stages)
        # the rule's warps, or the most below them whose rings fit (a warp per row tile at least)
        tiles = rows // MMA_ROWS
        fits = isinstance(stages, int) and fitting_warps(problem, stages, rows, shape_warps)
        num_warps = fits or max(tiles, MMA_WARPS[-1])  # none fits: tensor_core_config says so
    tuned = with_overrides(dict(TENSOR_CORES=int(tensor_cores), STAGES=stages,
                                NUM_WARPS=num_warps, BLOCK_H=block_h, TPR=None, UNROLL=None,
                                PREFETCH=PREFETCH, ITEMS_FIRST=ITEMS_FIRST), config)
    if tuned["ITEMS_FIRST"] not in (0, 1):
        raise ProblemError(f"config: ITEMS_FIRST={tuned['ITEMS_FIRST']}: must be 0 or 1")
    base = dict(HEAD_DIM=problem.head_dim, DTYPE_ID=DTYPE_IDS[problem.dtype],
                KV_DTYPE_ID=DTYPE_IDS[kv_dtype], IS_PAGED=int(problem.layout == "paged"),
                ITEMS_FIRST=tuned["ITEMS_FIRST"], SOFTCAP=int(problem.softcap is not None),
                MULTI_TOKEN=int(problem.q_len > 1))
    if tuned["TENSOR_CORES"] not in (0, 1):
        raise ProblemError(f"config: TENSOR_CORES={tuned['TENSOR_CORES']}: must be 0 or 1")
    # a key of the other loop would be ignored silently: refuse it
    other = CUDA_CORE_KEYS if tuned["TENSOR_CORES"] else TENSOR_CORE_KEYS
    if set(config or {}) & set(other):
        raise ProblemError(f"config: {', '.join(sorted(set(config) & set(other)))} tune the "
                           f"{'CUDA-core' if tuned['TENSOR_CORES'] else 'tensor-core'} loop, but "
                           f"this launch runs on {'tensor' if tuned['TENSOR_CORES'] else 'CUDA'} "
                           "cores" + (f" (set TENSOR_CORES={1 - tuned['TENSOR_CORES']})"
                                      if tensor_cores or tuned["TENSOR_CORES"] else ""))
    if tuned["TENSOR_CORES"]:
        return {**base, **tensor_core_config(problem, tuned)}
    return {**base, **cuda_core_config(problem, tuned)}


# where split-K merges split sequences: a kernel of its own, or the split kernel
MERGES = ("kernel", "fused")


def split_merge(config: dict | None) -> tuple[dict, str | None]:
    """``config`` without ``MERGE`` and the merge it asks for (None: split-K's plan chooses).
    One-pass takes the key too and has nothing to merge, so a run's ``--config`` may set it for
    the whole backend."""
    config = dict(config or {})
    merge = config.pop("MERGE", None)
    if merge is not None and merge not in MERGES:
        raise ProblemError(f"config: MERGE={merge!r}: must be one of {MERGES}")
    return config, merge


def tensor_core_config(problem, tuned: dict) -> dict[str, int]:
    """The tensor-core loop's -D values: the ring's depth and its shared memory (the layout of
    tensor_cores.cuh, which checks it at compile time)."""
    if not tensor_cores_fit(problem):
        raise ProblemError(f"config: TENSOR_CORES=1 needs a 16-bit dtype and head_dim % 16 == 0 "
                           f"(got {problem.dtype}, head_dim {problem.head_dim})")
    stages, num_warps = tuned["STAGES"], tuned["NUM_WARPS"]
    block_h = tuned["BLOCK_H"] or MMA_ROWS
    if block_h not in MMA_BLOCK_H:
        raise ProblemError(f"config: BLOCK_H={block_h}: the tensor-core loop takes "
                           f"{', '.join(map(str, MMA_BLOCK_H))} query rows a CTA (row tiles of "
                           f"the mma's {MMA_ROWS})")
    if block_h > rows_block(problem):
        raise ProblemError(f"config: BLOCK_H={block_h}: the KV head's {problem.q_len} x "
                           f"{problem.group_size} query rows fit in {rows_block(problem)}; more "
                           "rows a CTA would only be padding")
    # a ring needs a buffer to fill while one is read; 16 tokens a slice, up to 256 threads a CTA
    if not isinstance(stages, int) or not 2 <= stages <= 8 or num_warps not in (1, 2, 4, 8):
        raise ProblemError(f"config: STAGES={stages}, NUM_WARPS={num_warps}: STAGES must be in "
                           "[2, 8], NUM_WARPS 1, 2, 4 or 8")
    if num_warps % (block_h // MMA_ROWS):
        raise ProblemError(f"config: NUM_WARPS={num_warps}, BLOCK_H={block_h}: a warp per row "
                           f"tile of {MMA_ROWS} for each token slice, so NUM_WARPS must be a "
                           f"multiple of {block_h // MMA_ROWS} (or set BLOCK_H={MMA_ROWS})")
    smem = ring_smem_bytes(problem.head_dim, num_warps, stages, problem.kv_itemsize, block_h)
    if smem > SMEM_PER_CTA:
        raise ProblemError(f"config: STAGES={stages} x NUM_WARPS={num_warps} at head_dim "
                           f"{problem.head_dim} needs {smem} bytes of shared memory, more than "
                           f"the {SMEM_PER_CTA} of a CTA")
    return dict(BLOCK_H=block_h, NUM_WARPS=num_warps, TENSOR_CORES=1, STAGES=stages,
                SMEM_BYTES=smem)


def ring_smem_bytes(head_dim: int, num_warps: int, stages: int, kv_itemsize: int,
                    block_h: int) -> int:
    """tensor_cores.cuh's dynamic shared memory: its LAYOUT_BYTES (K and V rings of 16 rows of
    ``kv_itemsize`` elements per token slice, NUM_WARPS / the row tiles of them; the 16-bit Q
    tile of ``block_h`` rows; the row-offset table; rows padded to whole 128-byte lines), or the
    warps' states after the loop where they are larger (STATE_BYTES: fp8 rings are half the
    bytes)."""
    def row_bytes(itemsize: int) -> int:
        return -(-head_dim * itemsize // 128) * 128

    block_n = 16 * max(1, num_warps // (block_h // MMA_ROWS))
    layout = 2 * stages * block_n * row_bytes(kv_itemsize) + block_h * row_bytes(2) + \
        stages * block_n * 8
    return max(layout, num_warps * MMA_ROWS * (head_dim + 2) * 4)


def cuda_core_config(problem, tuned: dict) -> dict[str, int]:
    """The CUDA-core loop's -D values. Threads per row: ``common.threads_per_row`` (two 16-byte
    vectors a thread where the registers allow; the faster choice in
    results/nvidia-h200/sweeps/2026-11-21-cupy.log). UNROLL tokens x VPT vectors stay at UNROLL
    loads per thread per step, so the K/V buffers fit in registers."""
    vec = LOAD_BYTES // problem.kv_itemsize  # cache elements a load
    vecs_per_row = problem.head_dim // vec
    # a thread holds at least a vector of q and of the accumulator per row (the draft's tokens x
    # the group's heads): fp8's 16-element vectors halve the rows whose state fits in registers
    block_h = min(problem.q_len * problem.group_size, MAX_BLOCK_H, REGISTER_FLOATS // vec)
    tpr = tuned["TPR"]
    if tpr is None:
        tpr = threads_per_row(vecs_per_row, vec, block_h, REGISTER_FLOATS)
    num_warps = tuned["NUM_WARPS"]
    check_thread_mapping(tpr, 1, num_warps)  # TPR before it divides
    vpt = -(-vecs_per_row // tpr)
    unroll = max(1, UNROLL // vpt) if tuned["UNROLL"] is None else tuned["UNROLL"]
    check_thread_mapping(tpr, unroll, num_warps)
    if tuned["PREFETCH"] not in (0, 1):
        raise ProblemError(f"config: PREFETCH={tuned['PREFETCH']}: must be 0 or 1")
    # the merge's m, l and acc in static shared memory (+16: the fused split-K merge's flag)
    if num_warps * block_h * (problem.head_dim + 2) * 4 + 16 > SMEM_LIMIT:
        raise ProblemError(f"config: {num_warps} warps x {block_h} heads x head_dim "
                           f"{problem.head_dim} floats exceed the shared memory of the merge")
    return dict(BLOCK_H=block_h, TENSOR_CORES=0, VEC=vec, TPR=tpr, VPT=vpt, NUM_WARPS=num_warps,
                UNROLL=unroll, PREFETCH=tuned["PREFETCH"])


def step_tokens(defines: dict[str, int]) -> int:
    """Tokens one CTA consumes per loop step: STEP in the kernels (a tile of 16 per token slice on
    tensor cores, row groups x UNROLL on CUDA cores)."""
    if defines["TENSOR_CORES"]:  # a warp per row tile shares each slice of 16 tokens
        return 16 * defines["NUM_WARPS"] // (defines["BLOCK_H"] // MMA_ROWS)
    return defines["NUM_WARPS"] * (32 // defines["TPR"]) * defines["UNROLL"]


def launch_config(inputs, config: dict | None = None, split: bool = False,
                  sharers: int | None = None) -> dict[str, int]:
    """``pick_launch_config`` for the launchers, checked against the device: the tensor-core
    loop's ring is sized for sm_90 (227 KiB of shared memory a CTA; cp.async and bf16 mma need
    sm_80), so another GPU gets ``Unsupported``, before anything is built."""
    import torch

    on_gpu = inputs.device.type == "cuda"
    num_sms = common.sm_count(inputs.device) if on_gpu else NUM_SMS
    defines = pick_launch_config(inputs.problem, config, num_sms, common.l2_bytes(inputs.device), split,
                                 sharers)
    capability = torch.cuda.get_device_capability(inputs.device) if on_gpu else None
    if defines["TENSOR_CORES"] and capability and capability < (9, 0):
        raise Unsupported("the tensor-core loop is built for sm_90 and later (its shared-memory "
                          "rings): run with config TENSOR_CORES=0 on this GPU")
    if inputs.problem.cache.quantised and capability and capability < (8, 9):
        raise Unsupported("an fp8 cache is converted by PTX cvt from fp8 pairs, which needs sm_89 "
                          "or later")
    return defines


def resident_ctas(defines: dict[str, int]) -> int:
    """CTAs the planner counts on per SM: two (registers), fewer where a ring's shared memory
    does not leave room for the second."""
    if defines["TENSOR_CORES"]:
        return max(1, min(2, SMEM_PER_SM // (defines["SMEM_BYTES"] + SMEM_RESERVED)))
    return 2


def num_head_blocks(problem, defines: dict[str, int]) -> int:
    return common.num_head_blocks(problem, defines["BLOCK_H"])


def source(name: str) -> str:
    """``name`` with the headers it includes inlined (both loops' headers: the -D values pick
    one), so CuPy's on-disk cache keys on all the code, after the fp8 -> bf16 widenings as
    string macros (``common.fp8_to_bf16_ptx``, which the Triton and Gluon kernels use too)."""
    widenings = "".join(
        f"#define {fmt}_TO_BF16_ASM " + json.dumps(common.fp8_to_bf16_ptx(bits, "%")) + "\n"
        for fmt, bits in (("E4M3", 3), ("E5M2", 2)))
    return widenings + re.sub(r'#include "(\w+\.cuh)"', lambda m: (HERE / m[1]).read_text(),
                              (HERE / name).read_text())


NVRTC_OPTIONS = ("--std=c++17", "--use_fast_math")


@functools.cache
def _module(name: str, defines: tuple[tuple[str, int], ...]):
    import cupy

    options = NVRTC_OPTIONS + tuple(f"-D{k}={v}" for k, v in defines)
    return cupy.RawModule(code=source(name), options=options)


def get_kernel(name: str, function: str, defines: dict[str, int]):
    return _module(name, tuple(sorted(defines.items()))).get_function(function)


def view(tensor):
    """Zero-copy CuPy view of a CUDA tensor (16-bit floats as int16, fp8 as uint8: the kernels
    read raw bits, and CuPy has neither bfloat16 nor fp8)."""
    import cupy
    import torch

    if tensor.dtype in (torch.float16, torch.bfloat16):
        tensor = tensor.view(torch.int16)
    elif tensor.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        tensor = tensor.view(torch.uint8)
    return cupy.from_dlpack(tensor)


def mask_kernel_args(problem) -> tuple:
    """The attention kernels' last arguments: the window (int32's largest without one), the soft
    cap in log2 units (``common.mask_args``) and the query tokens per sequence."""
    import numpy as np

    mask = common.mask_args(problem)
    return np.int32(mask["window"]), np.float32(mask["softcap"]), np.int32(problem.q_len)


def scale_args(inputs) -> tuple:
    """The kernels' last arguments: K's and V's fp8 scales and their stride over KV heads
    (``common.kv_scale_args``; stand-ins an unquantised cache's kernels never read)."""
    import numpy as np

    scales = common.kv_scale_args(inputs)
    return (view(scales["k_scale_ptr"]), view(scales["v_scale_ptr"]),
            np.int32(scales["scale_stride"]))


def _cupy_stream(handle: int):
    import cupy

    return cupy.cuda.ExternalStream(handle)


current_stream = on_torch_stream(_cupy_stream)


def grid(defines: dict[str, int], head_blocks: int, items: int) -> tuple[int, int]:
    """The attention kernels' grid, its axes in the order ITEMS_FIRST sets."""
    return (items, head_blocks) if defines["ITEMS_FIRST"] else (head_blocks, items)


def dynamic_smem(defines: dict[str, int]) -> int:
    """Bytes of dynamic shared memory the attention kernels launch with (the tensor-core ring)."""
    return defines.get("SMEM_BYTES", 0)


def launcher(launches, defines: dict[str, int]):
    """``run()`` that launches ``[(kernel, grid, args, dynamic shared bytes), ...]`` in order on
    PyTorch's current stream, ``NUM_WARPS`` warps per CTA. A kernel given more than the default
    48 KiB of dynamic shared memory is allowed it here, once, outside the timed call."""
    block = (defines["NUM_WARPS"] * 32,)
    for kernel, _, _, smem in launches:
        if smem > SMEM_LIMIT:
            kernel.max_dynamic_shared_size_bytes = smem

    def run():
        with current_stream():
            for kernel, grid, args, smem in launches:
                kernel(grid, block, args, shared_mem=smem)

    return run


# what Launch.config records, of each loop's parameters (every knob it takes: a rule's choice is
# a configuration the tuner can start from; split-K adds ITEMS_FIRST)
REPORTED = ("TENSOR_CORES", "BLOCK_H", "NUM_WARPS", "STAGES", "TPR", "UNROLL", "PREFETCH")


def reported(defines: dict[str, int]) -> dict[str, int]:
    return {key: defines[key] for key in REPORTED if key in defines}
