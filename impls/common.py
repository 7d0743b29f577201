"""Host-side pieces every DSL backend's launchers share: the log-domain constants, the
``num_splits`` rule, the alignment rule of vectorised loads, launch-config overrides and the
CUDA-core kernels' thread mapping, the dense layout's stand-in block table, and the handle on
PyTorch's current stream. Pure Python and torch; no DSL is imported here. (The split-K plan is
``impls.plan``.)
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

from impls.registry import Unsupported
from specs.problem import INT32_MAX, ProblemError

LOG2E = 1.4426950408889634  # 1/ln(2): q is pre-scaled by sm_scale * LOG2E, softmax uses exp2
LN2 = 0.6931471805599453  # a log2-domain LSE times LN2 is the natural-log LSE the spec defines
# Soft-capping's tanh in the DSL kernels: (1 - e) / (1 + e) with e = exp2(-2|x| log2 e) cancels
# for small |x| (relative error ~2^-24 / 2|x|: 2^-21 at 1/16, 0.3 % at 1e-5, a cap far above the
# scores); below this |x| the series x (1 - x^2/3 + 2x^4/15) (relative error < 2^-25) is used
TANH_SERIES_BELOW = 0.0625
MAX_NUM_SPLITS = 4096  # what an explicit num_splits may ask for (the workspace grows with it)
SMEM_BYTES = 227 * 1024  # shared memory one program (CTA) may take on sm_90


# Head dims that are not a power of two: two tiles (dim_split 1) or one padded (0). Padded to
# 256, a tile holds half the tokens a stage would and takes twice the shared memory (one
# program an SM, not two): split at any rows. Padded to 128 or less, the masked padding reads
# no bytes and one load streams better than two narrow ones: split only where a KV head's rows
# fill a 16-row MMA tile, whose padded dims are then real work (results/nvidia-h200/
# 2026-11-26-dim-split)
DIM_SPLIT_ROWS = 16
DIM_SPLIT_PAD = 256  # ... and at any rows where the one tile would be padded to this
MIN_DIM_TILE = 16  # a tile's dims at least: the MMA's k step


def dim_split_rule(problem) -> int:
    """``dim_split`` for ``problem`` by the rule above (1: the head dim in two tiles)."""
    pad = 1 << (problem.head_dim - 1).bit_length()
    return int(pad >= DIM_SPLIT_PAD or problem.q_len * problem.group_size >= DIM_SPLIT_ROWS)


def head_dim_tiles(head_dim: int, dim_split) -> tuple[int, int]:
    """(D_LO, D_HI): the head dim in one tile padded to a power of two (D_HI 0), or, with
    ``dim_split`` where that saves dims, in two: the largest power of two below it and the rest's
    (at least 16, the MMA's k step): 144 = 128 + 16, 192 = 128 + 64, 80 = 64 + 16; 240 stays
    256. Head dims below 16 are padded to 16: the MMA takes no narrower k."""
    if dim_split not in (0, 1):
        raise ProblemError(f"config: DIM_SPLIT={dim_split!r}: must be 0 or 1")
    pad = max(MIN_DIM_TILE, 1 << (head_dim - 1).bit_length())
    low = pad // 2
    if not dim_split or pad == head_dim or head_dim <= MIN_DIM_TILE:
        return pad, 0
    high = max(MIN_DIM_TILE, 1 << (head_dim - low - 1).bit_length())
    return (low, high) if low + high < pad else (pad, 0)


def tiles_reported(cfg: dict, keys) -> dict:
    """A tile kernel's ``keys`` of ``cfg`` for Launch.config, with the head dim's split as the
    ``dim_split`` knob had it (two tiles where D_HI > 0, ``head_dim_tiles``): no kernel parameter
    names it, and a rule's choice must be a configuration the tuner can start from and compare."""
    return {**{key: cfg[key] for key in keys}, "DIM_SPLIT": int(cfg["D_HI"] > 0)}


def program_tokens(problem) -> float:
    """Cache tokens a program of a whole sequence reads (its window's at most), averaged over the
    tokens rather than the programs (sum of n^2 over sum of n): the length of the sequence the
    average token is read by, so a ragged batch's few long programs, which hold most of its
    work, count for what they read. Where fewer than a K/V ring holds, the ring never fills,
    and the launch rules let several such programs share an SM instead."""
    spans = problem.attended_lens
    return sum(n * n for n in spans) / sum(spans)


def sm_count(device: torch.device) -> int:
    """Multiprocessors of the GPU; on the CPU a nominal 4 so split heuristics still split."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4


L2_BYTES = 50 * 2**20  # H100 SXM's L2 (H200: 60 MiB): what the pure launch rules assume


def l2_bytes(device: torch.device) -> int:
    """L2 of the GPU (rules that ask whether a problem's K/V fit there); on the CPU, an H100's."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).L2_cache_size
    return L2_BYTES


# ---- split-K ------------------------------------------------------------------------------------
def check_num_splits(num_splits) -> None:
    if isinstance(num_splits, bool) or not isinstance(num_splits, int) \
            or not 1 <= num_splits <= MAX_NUM_SPLITS:
        raise ProblemError(f"num_splits={num_splits!r}: must be an integer in [1, {MAX_NUM_SPLITS}]")


# ---- launch configuration -----------------------------------------------------------------------
def with_overrides(defaults: dict[str, Any], config: dict[str, Any] | None) -> dict[str, Any]:
    """``defaults`` with the ``config`` launch option applied (its keys were checked against
    ``Backend.space`` and put in the kernel's names by ``Impl.prepare``; ``scripts/sweep.py``
    and ``--tune`` search through it, ``--config`` passes it from the command line)."""
    return {**defaults, **(config or {})}


def threads_per_row(vecs_per_row: int, vec: int, block_h: int, register_floats: int) -> int:
    """TPR of the CUDA-core kernels (CuPy, Numba): half the power of two covering a row's
    vectors, so each thread takes two (one shuffle level less per score), unless the head
    block's q and accumulator would then exceed ``register_floats`` per thread."""
    covering = min(32, 1 << (vecs_per_row - 1).bit_length())
    if covering > 1 and block_h * -(-vecs_per_row // (covering // 2)) * vec <= register_floats:
        return covering // 2
    return covering


def check_thread_mapping(tpr: int, unroll: int, num_warps: int) -> None:
    """The CUDA-core kernels' thread mapping, as a ``config`` may set it."""
    if tpr not in (1, 2, 4, 8, 16, 32) or not 1 <= unroll <= 64 or not 1 <= num_warps <= 32:
        raise ProblemError(f"config: TPR={tpr}, UNROLL={unroll}, NUM_WARPS={num_warps}: TPR must "
                           "be a power of two <= 32, UNROLL in [1, 64], NUM_WARPS in [1, 32]")


def num_head_blocks(problem, max_block_h: int) -> int:
    """Programs per (sequence, KV head): its query rows (q_len tokens x the GQA group) in blocks
    of at most ``max_block_h``."""
    return -(-problem.q_len * problem.group_size // max_block_h)


def query_args(problem, block_h: int) -> dict:
    """The tile kernels' query-row arguments (keywords): ``q_len`` and ``row_blocks``, the
    programs a (sequence or item, KV head) takes for its q_len x group rows in blocks of
    ``block_h``."""
    return dict(q_len=problem.q_len, row_blocks=num_head_blocks(problem, block_h))


def cache_args(inputs):
    """(block_table, stride_btb, page_size) as the kernels take them on either layout: the
    dense layout reads no table, so ``seq_lens`` as a [B, 1] view stands in, stride 0, page 1."""
    if inputs.problem.layout == "paged":
        return inputs.block_table, inputs.block_table.stride(0), inputs.problem.page_size
    return inputs.seq_lens.view(-1, 1), 0, 1


def tile_kernel_args(inputs, out, lse, work=None, part_out=None, part_lse=None):
    """The runtime arguments of the Triton and Gluon kernels, which share one signature: without
    ``work``, the one-pass ``decode_kernel``'s; with a plan's ``work`` tensors and partials,
    ``(split_kernel's, combine_kernel's)``."""
    p, q, k, v = inputs.problem, inputs.q, inputs.k, inputs.v
    table, stride_btb, page_size = cache_args(inputs)
    strides = (q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2), stride_btb,
               out.stride(0), out.stride(1), lse.stride(0))
    scalars = (page_size, p.group_size, p.scale * LOG2E)
    if work is None:
        return (q, k, v, inputs.seq_lens, table, out, lse, *strides, *scalars)
    part_strides = (part_out.stride(0), part_out.stride(1), part_lse.stride(0))
    return ((q, k, v, work["items"], table, out, lse, part_out, part_lse, *strides,
             *part_strides, *scalars),
            (part_out, part_lse, work["merge_seqs"], work["merge_indptr"], out, lse,
             *part_strides, out.stride(0), out.stride(1), lse.stride(0)))


def kv_scale_args(inputs) -> dict:
    """The kernels' fp8 scale arguments (keywords, as the Triton and Gluon kernels name them):
    K's and V's float32 scales, [Hkv] or [1], and their stride over KV heads (1: one each, 0:
    one for all). An unquantised cache passes ones the kernels never read (or multiply by, which
    changes no bit), so every build takes the same argument types."""
    if inputs.k_scale is None:
        ones = torch.ones(1, dtype=torch.float32, device=inputs.device)
        return dict(k_scale_ptr=ones, v_scale_ptr=ones, scale_stride=0)
    return dict(k_scale_ptr=inputs.k_scale, v_scale_ptr=inputs.v_scale,
                scale_stride=int(inputs.problem.kv_scale == "head"))


def fp8_to_bf16_ptx(mantissa_bits: int, operand: str = "$") -> str:
    """PTX widening four fp8 bytes (operand 2, the first in the low byte) to four bf16 values
    (operands 0 and 1, the first in the low half; a Triton/Gluon ``inline_asm_elementwise`` of
    ``pack=4``, or CUDA inline asm with ``operand`` "%") for an fp8 format of ``mantissa_bits``
    (3: e4m3, 2: e5m2). sm_90 has no fp8 -> bf16 instruction: the compilers go through fp16 and convert
    each value again, three conversions per pair on the slow conversion pipe, which bounds an
    fp8 decode kernel below the bandwidth. Here per pair: a byte permute that sign-extends each
    byte to 16 bits, a shift and a mask place sign, exponent and mantissa as a bf16 of the same
    bits (the fp8 value times 2^(bias - 127), exact, subnormals included), and one bf16x2 fma by
    2^(127 - bias) restores the value exactly. Finite values only: NaN and inf become finite
    (a cache's NaN marks a page no kernel may read)."""
    shift = 7 - mantissa_bits
    bias = (1 << (6 - mantissa_bits)) - 1  # 7 for e4m3, 15 for e5m2
    mask = 0x8000 | (0x7F << shift)
    factor = (127 - bias + 127) << 7  # bf16 bits of 2^(127 - bias)
    return f"""{{
    .reg .b32 lo, hi, f, z;
    mov.b32 f, {factor << 16 | factor:#010x};
    mov.b32 z, 0x80008000;
    prmt.b32 lo, {operand}2, 0, 0x9180;
    prmt.b32 hi, {operand}2, 0, 0xb3a2;
    shl.b32 lo, lo, {shift};
    shl.b32 hi, hi, {shift};
    and.b32 lo, lo, {mask << 16 | mask:#010x};
    and.b32 hi, hi, {mask << 16 | mask:#010x};
    fma.rn.bf16x2 {operand}0, lo, f, z;
    fma.rn.bf16x2 {operand}1, hi, f, z;
    }}"""


def require_e4m3_hardware(inputs) -> None:
    """Raise ``Unsupported`` for an e4m3 cache on a GPU older than sm_89, for kernels whose
    compiler has no e4m3 type below it (e5m2 it widens anywhere)."""
    if inputs.problem.kv_dtype == "float8_e4m3fn" and inputs.device.type == "cuda" and \
            torch.cuda.get_device_capability(inputs.device) < (8, 9):
        raise Unsupported("an e4m3 cache: the compiler's e4m3 type (float8e4nv) needs sm_89 "
                          "or newer")


def mask_args(problem) -> dict:
    """The kernels' mask arguments (keywords): ``window`` (tokens attended at the end of each
    sequence; int32's largest without one, so its start is 0) and ``softcap`` in log2 units
    (the spec's cap times log2(e), for kernels whose scores are; 1.0, unread, without one)."""
    window = problem.window if problem.window is not None else INT32_MAX
    softcap = problem.softcap * LOG2E if problem.softcap is not None else 1.0
    return dict(window=window, softcap=softcap)


# ---- memory and streams -------------------------------------------------------------------------
def require_alignment(inputs, load_bytes: int) -> None:
    """Raise ``Unsupported`` when loads of ``load_bytes`` per thread cannot read q, k, v rows."""
    for name in ("q", "k", "v"):
        t = getattr(inputs, name)
        if t.data_ptr() % load_bytes or t.stride(-1) != 1 or any(
                s * t.element_size() % load_bytes for s in t.stride()[:-1]):
            raise Unsupported(f"{name} rows are not {load_bytes}-byte aligned (the kernels load "
                              f"{load_bytes} bytes per thread)")


def on_torch_stream(wrap: Callable[[int], Any]) -> Callable[[], Any]:
    """A function returning ``wrap(handle)`` for PyTorch's current CUDA stream, made once per
    stream (a DSL's own handle on it; graph capture runs on a stream of its own)."""
    cached = functools.cache(wrap)
    return lambda: cached(torch.cuda.current_stream().cuda_stream)
