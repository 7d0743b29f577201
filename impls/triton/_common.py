"""Triton building blocks shared by the one-pass and split-K decode kernels.

Every kernel runs one program per (sequence ``pid_b`` or split-K work item ``pid_i``, KV head
``pid_kvh``).
The program loads the ``group_size`` query heads that share the KV head as one
``[BLOCK_H, HEAD_DIM_PAD]`` tile (``BLOCK_H`` >= 16 because ``tl.dot`` needs 16 rows; padding
rows are masked), so each K/V tile is read once per group and both products run on the tensor
cores. Softmax is online, in the log2 domain (``exp2``), with a float32 running max ``m_i``, sum
``l_i`` and accumulator ``acc``.

Both KV layouts are 4-D ``[page, row, kv_head, dim]`` tensors with a contiguous last dimension
(strides ``stride_kp``, ``stride_kt``, ``stride_kh``): paged, page = the block table's entry for
the token, row = token % page_size; dense, page = the sequence, row = the token. ``kv_coords``
maps a tile's tokens to (page, row); the rest of the code is layout-blind. Where the page size
divides the tile or the tile divides it (``PAGE_SIZE``, constexpr), a tile loads its table
entries once per page (one entry for a tile inside a page); any other page size is gathered per
token (``PAGE_SIZE`` 0, the runtime ``page_size``); either way a tile's entries are loaded one
tile ahead, so the pipeliner streams paged K/V tiles through as many stages as dense ones.
"""

import os

import triton
import triton.language as tl
from triton.runtime.errors import PTXASError

from impls import plan as planner
from impls.common import LN2 as _LN2
from impls.common import LOG2E as _LOG2E
from impls.common import TANH_SERIES_BELOW as _TANH_SERIES_BELOW
from impls.common import (L2_BYTES, SMEM_BYTES, dim_split_rule, fp8_to_bf16_ptx, head_dim_tiles,
                           num_head_blocks, sm_count, tiles_reported, with_overrides)
from specs.problem import ProblemError

LN2 = tl.constexpr(_LN2)
LOG2E = tl.constexpr(_LOG2E)
TANH_SERIES_BELOW = tl.constexpr(_TANH_SERIES_BELOW)
E4M3_TO_BF16 = tl.constexpr(fp8_to_bf16_ptx(3))
E5M2_TO_BF16 = tl.constexpr(fp8_to_bf16_ptx(2))


@triton.jit
def kv_coords(pid_b, tile_start, offs_n, mask_n, end, block_table_ptr, stride_btb, page_size,
              BLOCK_N: tl.constexpr, IS_PAGED: tl.constexpr, PAGE_SIZE: tl.constexpr):
    """(page, row) of the tokens ``offs_n`` (the tile starting at ``tile_start``, a multiple of
    BLOCK_N) of sequence ``pid_b`` in the KV tensors."""
    table = block_table_ptr + pid_b * stride_btb
    if IS_PAGED and PAGE_SIZE == 0:  # any page size: each token's entry
        page = tl.load(table + offs_n // page_size, mask=mask_n, other=0)
        return page.to(tl.int64), offs_n % page_size
    elif IS_PAGED and PAGE_SIZE >= BLOCK_N:  # the tile lies inside one page: one entry
        page = tl.load(table + tile_start // PAGE_SIZE, mask=tile_start < end, other=0)
        return page.to(tl.int64) + tl.zeros_like(offs_n).to(tl.int64), offs_n % PAGE_SIZE
    elif IS_PAGED:  # BLOCK_N // PAGE_SIZE whole pages: one entry each, broadcast to their rows
        PAGES: tl.constexpr = BLOCK_N // PAGE_SIZE
        offs_p = tile_start // PAGE_SIZE + tl.arange(0, PAGES)
        pages = tl.load(table + offs_p, mask=offs_p * PAGE_SIZE < end, other=0)  # no entry past the end
        page = tl.reshape(tl.broadcast_to(pages[:, None], (PAGES, PAGE_SIZE)), (BLOCK_N,))
        return page.to(tl.int64), offs_n % PAGE_SIZE
    else:
        # int64: token x row stride overflows int32 past 2^31 elements (e.g. MHA at 512k tokens)
        return pid_b.to(tl.int64) + tl.zeros_like(offs_n).to(tl.int64), offs_n.to(tl.int64)


@triton.jit
def load_q_rows(q_ptr, pid_b, pid_kvh, group_size, q_len, row0, stride_qb, stride_qh, offs_h,
                offs_d, HEAD_DIM: tl.constexpr):
    """Rows ``row0 + offs_h`` of KV head ``pid_kvh``'s query rows as a [BLOCK_H, HEAD_DIM_PAD]
    tile: row r is query token r // group_size of sequence ``pid_b``, head r % group_size of the
    group (rows past q_len x group_size are padding, zero)."""
    rows = row0 + offs_h
    token = pid_b * q_len + rows // group_size
    heads = pid_kvh * group_size + rows % group_size
    mask = (rows < q_len * group_size)[:, None] & (offs_d < HEAD_DIM)[None, :]
    return tl.load(q_ptr + token[:, None] * stride_qb + heads[:, None] * stride_qh + offs_d[None, :],
                   mask=mask, other=0.0)


@triton.jit
def fp8_to_bf16(x):
    """An fp8 tile as bf16, exactly, by bit operations (``impls.common.fp8_to_bf16_ptx``)."""
    if x.dtype == tl.float8e5:
        return tl.inline_asm_elementwise(E5M2_TO_BF16, "=r,=r,r", [x.to(tl.uint8, bitcast=True)],
                                         dtype=tl.bfloat16, is_pure=True, pack=4)
    return tl.inline_asm_elementwise(E4M3_TO_BF16, "=r,=r,r", [x.to(tl.uint8, bitcast=True)],
                                     dtype=tl.bfloat16, is_pure=True, pack=4)


@triton.jit
def tanh(x):
    """tanh to ~2^-21 relative, as ``impls.common.TANH_SERIES_BELOW`` says: from one exp2 of
    -2|x| (no overflow), or a series below |x| = 1/16, where 1 - exp2 cancels."""
    ax = tl.abs(x)
    e = tl.exp2(-2.0 * LOG2E * ax)
    x2 = x * x
    t = tl.where(ax < TANH_SERIES_BELOW, ax * (1.0 - x2 * (1.0 / 3.0 - x2 * (2.0 / 15.0))),
                 (1.0 - e) / (1.0 + e))
    return tl.where(x < 0, -t, t)


@triton.jit
def attend_range(q, q_hi, m_i, l_i, acc, acc_hi, k_ptr, v_ptr, block_table_ptr, pid_b, pid_kvh,
                 start, end, first, row_first, row_end, stride_kp, stride_kt, stride_kh,
                 stride_btb, page_size, qk_scale, softcap, offs_d, offs_d_hi,
                 HEAD_DIM: tl.constexpr, D_HI: tl.constexpr,
                 BLOCK_N: tl.constexpr, IS_PAGED: tl.constexpr, PAGE_SIZE: tl.constexpr,
                 UPCAST_DOT: tl.constexpr, KV_SCALED: tl.constexpr, SOFTCAP: tl.constexpr,
                 ROW_SPANS: tl.constexpr):
    """Online softmax over tokens [start, end) of one sequence and KV head, those below
    ``first`` (a window's start) masked: ``start`` is a tile boundary at or before ``first``
    (tiles stay aligned to pages), and no tile is wholly masked. ``ROW_SPANS`` (multi-token
    queries): each row also masks what its own query token does not see, [row_first, row_end)
    per row; a row may then see nothing of a tile, or of the whole range (its max stays -inf,
    so the exponentials are taken against 0, and its sum stays 0).

    Masked tokens are never loaded (no read of poisoned rows or pages); their scores are -inf.
    ``UPCAST_DOT`` (constexpr so the casts vanish from GPU builds) feeds ``tl.dot`` float32
    copies: the CPU interpreter multiplies bf16 bit patterns as integers (triton-lang/triton
    #11584), so there bf16 operands are upcast after rounding, which keeps the result exact.
    ``KV_SCALED``: K/V are fp8, converted to the query's dtype as they land (exact: every fp8
    value is a bf16 and an fp16 value); their scales are applied by ``attend``.
    ``SOFTCAP``: each score s (log2 units) becomes softcap * tanh(s / softcap), ``softcap`` in
    log2 units too (the spec's cap times log2(e): the same tanh of the same ratio).
    ``D_HI`` > 0 (a head dim split in two tiles, ``pick_launch_config``): the dims ``offs_d_hi``
    past ``offs_d``'s are a second tile (``q_hi``, ``acc_hi``, their own K/V loads), the scores
    the sum of the two products; 0: ``q_hi`` and ``acc_hi`` are unused stand-ins.
    """
    mask_d = offs_d < HEAD_DIM
    mask_d_hi = offs_d_hi < HEAD_DIM
    # the block-table entries of the next tile are loaded a tile ahead and carried in the loop:
    # K/V addresses that do not wait on a load of their own iteration let Triton's pipeliner
    # multi-buffer the paged K/V loads as it does the dense ones (else one stage, no overlap)
    offs_next = start + tl.arange(0, BLOCK_N)
    page_next, row_next = kv_coords(pid_b, start, offs_next, (offs_next < end) & (offs_next >= first),
                                    end, block_table_ptr, stride_btb, page_size, BLOCK_N, IS_PAGED,
                                    PAGE_SIZE)
    for tile_start in range(start, end, BLOCK_N):
        offs_n = tile_start + tl.arange(0, BLOCK_N)
        mask_n = (offs_n < end) & (offs_n >= first)
        page, row = page_next, row_next
        offs_next = offs_n + BLOCK_N
        page_next, row_next = kv_coords(pid_b, tile_start + BLOCK_N, offs_next, offs_next < end,
                                        end, block_table_ptr, stride_btb, page_size, BLOCK_N,
                                        IS_PAGED, PAGE_SIZE)
        kv_off = page * stride_kp + row * stride_kt + pid_kvh * stride_kh
        mask = mask_n[:, None] & mask_d[None, :]
        k = as_query_dtype(tl.load(k_ptr + kv_off[:, None] + offs_d[None, :], mask=mask, other=0.0),
                           q, UPCAST_DOT, KV_SCALED)
        v = as_query_dtype(tl.load(v_ptr + kv_off[:, None] + offs_d[None, :], mask=mask, other=0.0),
                           q, UPCAST_DOT, KV_SCALED)
        s = dot(q, tl.trans(k), UPCAST_DOT)
        if D_HI > 0:
            mask_hi = mask_n[:, None] & mask_d_hi[None, :]
            k_hi = as_query_dtype(tl.load(k_ptr + kv_off[:, None] + offs_d_hi[None, :], mask=mask_hi,
                                          other=0.0), q, UPCAST_DOT, KV_SCALED)
            v_hi = as_query_dtype(tl.load(v_ptr + kv_off[:, None] + offs_d_hi[None, :], mask=mask_hi,
                                          other=0.0), q, UPCAST_DOT, KV_SCALED)
            s += dot(q_hi, tl.trans(k_hi), UPCAST_DOT)
        s = s * qk_scale
        if SOFTCAP:
            s = softcap * tanh(s / softcap)
        if ROW_SPANS:
            seen = (offs_n[None, :] >= row_first[:, None]) & (offs_n[None, :] < row_end[:, None])
            s = tl.where(seen & mask_n[None, :], s, float("-inf"))
        else:
            s = tl.where(mask_n[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_ref = m_new
        if ROW_SPANS:  # a row that has seen nothing: exponentials against 0 (no NaN), its max
            # kept -inf (a 0 kept as its max would underflow its later p's in the 16-bit pack)
            m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m_i - m_ref)
        p = tl.exp2(s - m_ref[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        p = p.to(v.dtype)  # P.V on the tensor cores in the input dtype, float32 accumulation
        acc = acc * alpha[:, None] + dot(p, v, UPCAST_DOT)
        if D_HI > 0:
            acc_hi = acc_hi * alpha[:, None] + dot(p, v_hi, UPCAST_DOT)
        m_i = m_new
    return m_i, l_i, acc, acc_hi


@triton.jit
def as_query_dtype(x, q, UPCAST_DOT: tl.constexpr, KV_SCALED: tl.constexpr):
    """A loaded K/V tile in the query's dtype: an fp8 one converted (exact either way)."""
    if KV_SCALED and q.dtype == tl.bfloat16 and not UPCAST_DOT:  # a GPU build, bf16
        x = fp8_to_bf16(x)
    elif KV_SCALED:  # fp16 (one cvt per pair), or the interpreter (it runs no PTX)
        x = x.to(q.dtype)
    return x


@triton.jit
def dot(a, b, UPCAST_DOT: tl.constexpr):
    """a @ b on the tensor cores, float32 accumulation (float32 copies in the interpreter)."""
    if UPCAST_DOT:
        a, b = a.to(tl.float32), b.to(tl.float32)
    return tl.dot(a, b, input_precision="ieee")


@triton.jit
def finish(m_i, l_i, acc):
    """Normalised output and natural-log LSE; an empty range gives 0 and -inf."""
    empty = l_i == 0.0
    out = acc / tl.where(empty, 1.0, l_i)[:, None]
    lse = tl.where(empty, float("-inf"), (m_i + tl.log2(tl.where(empty, 1.0, l_i))) * LN2)
    return out, lse


@triton.jit
def attend(q_ptr, k_ptr, v_ptr, block_table_ptr, pid_b, pid_kvh, start, end, group_size,
           stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, page_size, qk_scale,
           k_scale_ptr, v_scale_ptr, scale_stride, seq_len, window, softcap, q_len, row0,
           HEAD_DIM: tl.constexpr, D_LO: tl.constexpr, D_HI: tl.constexpr,
           BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, IS_PAGED: tl.constexpr,
           PAGE_SIZE: tl.constexpr, UPCAST_DOT: tl.constexpr, KV_SCALED: tl.constexpr,
           SOFTCAP: tl.constexpr, ROW_SPANS: tl.constexpr):
    """Attention of KV head ``pid_kvh``'s query rows ``row0 + [0, BLOCK_H)`` (row r: query
    token r // group_size, head r % group_size; rows past q_len x group_size are padding) over
    tokens [start, end) of a sequence of ``seq_len``: query token i sees tokens below
    seq_len - q_len + i + 1, its last ``window`` of them (all: int32's largest). The range is
    cut to start no earlier than the tile of the block's first row's window and to end at its
    last row's token (a range wholly outside is empty): (out, lse) per row, out normalised,
    lse natural-log (an empty row: 0 and -inf).
    An fp8 cache (``KV_SCALED``): K's scale folds into the score scale and V's into the output,
    one float32 product each, never a rounded dequantised tile (``scale_stride`` 1: a scale per
    KV head; 0: one for all). The head dim's tiles: [0, D_LO) and, where ``D_HI`` > 0, [D_LO,
    D_LO + D_HI) (``attend_range``): (out, out of the second tile's dims, lse); else the second
    is a stand-in."""
    offs_h = tl.arange(0, BLOCK_H)
    offs_d = tl.arange(0, D_LO)
    q = load_q_rows(q_ptr, pid_b, pid_kvh, group_size, q_len, row0, stride_qb, stride_qh, offs_h,
                    offs_d, HEAD_DIM)
    if D_HI > 0:
        offs_d_hi = D_LO + tl.arange(0, D_HI)
        q_hi = load_q_rows(q_ptr, pid_b, pid_kvh, group_size, q_len, row0, stride_qb, stride_qh,
                           offs_h, offs_d_hi, HEAD_DIM)
        acc_hi = tl.zeros([BLOCK_H, D_HI], tl.float32)
    else:  # stand-ins the compiler drops
        offs_d_hi = D_LO + tl.arange(0, 16)
        q_hi = tl.zeros([BLOCK_H, 16], q.dtype)
        acc_hi = tl.zeros([BLOCK_H, 16], tl.float32)
    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, D_LO], tl.float32)
    if KV_SCALED:
        qk_scale = qk_scale * tl.load(k_scale_ptr + pid_kvh * scale_stride)
    # each row's span; the block's first row sees from the earliest token, its last to the latest
    row_end = seq_len - q_len + 1 + (row0 + offs_h) // group_size
    row_first = tl.maximum(row_end - window, 0)
    last_row = tl.minimum(row0 + BLOCK_H, q_len * group_size) - 1
    first = tl.maximum(seq_len - q_len + 1 + row0 // group_size - window, 0)
    end = tl.minimum(end, seq_len - q_len + 1 + last_row // group_size)
    start = tl.maximum(start, first - first % BLOCK_N)  # no tile wholly before the window
    m_i, l_i, acc, acc_hi = attend_range(q, q_hi, m_i, l_i, acc, acc_hi, k_ptr, v_ptr,
                                         block_table_ptr, pid_b, pid_kvh, start, end, first,
                                         row_first, row_end, stride_kp, stride_kt, stride_kh,
                                         stride_btb, page_size, qk_scale, softcap, offs_d,
                                         offs_d_hi, HEAD_DIM, D_HI, BLOCK_N, IS_PAGED, PAGE_SIZE,
                                         UPCAST_DOT, KV_SCALED, SOFTCAP, ROW_SPANS)
    if KV_SCALED:
        v_scale = tl.load(v_scale_ptr + pid_kvh * scale_stride)
        acc = acc * v_scale
        acc_hi = acc_hi * v_scale
    out, lse = finish(m_i, l_i, acc)
    out_hi, _ = finish(m_i, l_i, acc_hi)
    return out, out_hi, lse


@triton.jit
def store_rows(out_ptr, lse_ptr, out, out_hi, lse, stride_ot, stride_oh, stride_lt, stride_lh,
               group_size, q_len, row0, BLOCK_H: tl.constexpr, HEAD_DIM: tl.constexpr,
               D_LO: tl.constexpr, D_HI: tl.constexpr):
    """Store the block's valid rows: row r (query token t = r // group_size, head g of the
    group) of out at ``out_ptr + t * stride_ot + g * stride_oh``, its lse at ``lse_ptr +
    t * stride_lt + g * stride_lh`` (both pointers at the sequence's first token and the group's
    first head); ``out_hi`` the dims from D_LO on where ``D_HI`` > 0 (``attend``)."""
    rows = row0 + tl.arange(0, BLOCK_H)
    mask_h = rows < q_len * group_size
    token, head = rows // group_size, rows % group_size
    row_ptr = out_ptr + (token * stride_ot + head * stride_oh)[:, None]
    offs_d = tl.arange(0, D_LO)
    tl.store(row_ptr + offs_d[None, :], out.to(out_ptr.dtype.element_ty),
             mask=mask_h[:, None] & (offs_d < HEAD_DIM)[None, :])
    if D_HI > 0:
        offs_d_hi = D_LO + tl.arange(0, D_HI)
        tl.store(row_ptr + offs_d_hi[None, :], out_hi.to(out_ptr.dtype.element_ty),
                 mask=mask_h[:, None] & (offs_d_hi < HEAD_DIM)[None, :])
    tl.store(lse_ptr + token * stride_lt + head * stride_lh, lse, mask=mask_h)


# ---- launch configuration ----------------------------------------------------------------------
MIN_BLOCK_H = 16  # tl.dot needs at least 16 rows: the query group is padded up to this
# Multi-token queries: the query rows (q_len tokens x the group) a program takes at most, beyond
# a group of more: a q tile of 16 KB (64 rows of bf16 x 128; 16 of float32 x 256), as its
# accumulator's registers and the shared memory of its layout conversions grow with it; a second
# program of the KV head re-reads K/V from L2
MAX_Q_TILE_BYTES = 16 * 1024
# ... and its accumulator and scores, rows x (HEAD_DIM_PAD + BLOCK_N) / (32 x num_warps) floats a
# thread, within this many: past it the kernel spills (ptxas for sm_90: 64 rows x (128 + 128) on
# 4 warps, 128 floats, 56-60 B of spill stores; 64 x (128 + 64), 96, none; tests/
# test_triton_sm90.py checks the rule's configs), so the tile gets narrower (to 32 tokens at least)
THREAD_FLOATS = 96
MIN_FITTED_BLOCK_N = 32
# Tile and pipeline: the fastest configuration of scripts/sweep.py's cells on an H200
# (results/nvidia-h200/sweeps/2026-11-21-triton.log).
MAX_BLOCK_N = 128  # tokens per K/V tile: 128 x 128 x 2 B = 32 KB of K and of V at bf16 D=128
# Beyond the q tile's rows, where the K/V do not fit in L2 (a KV head's further row blocks then
# compete for L2 with every other head's reads; re-tested with the blocks adjacent, mixed for
# one-pass alone: results/nvidia-h100/2026-11-27-one-pass-row-order): a program takes up to
# this many rows on two warpgroups, as far as THREAD_FLOATS holds them (16-bit queries up to
# head dim 128). 128-row programs were slower than two of 64 at head dim 128
# (results/nvidia-h200/2026-11-26-spec-decode)
MAX_BLOCK_H = 64
WIDE_WARPS = 8
# ... and past 128 dims (head dims 129-256, where a row's products cost more than its K/V read),
# up to 128 rows: one 64-row warpgroup MMA a warpgroup, the K/V read once for both. Two 64-row
# programs took 1.4-1.7x the time on the drafts of head dims 192-256 with 96-128 rows
# (results/nvidia-h100/2026-11-27-wide-rows). A thread then holds up to WIDE_THREAD_FLOATS
# (ptxas for sm_90: 128 x (256 + 32) over 8 warps, 144 floats, no spill; 128 x (256 + 64), 160,
# 40 B of spill stores), so the tile narrows to 32 tokens there.
WIDE_DIMS = 128
MAX_WIDE_BLOCK_H = 128
WIDE_THREAD_FLOATS = 144
TILE_PAIR_BYTES = 64 * 1024  # K + V tile of one pipeline stage: wider rows get fewer tokens
MIN_SHARED_BLOCK_N = 16  # tokens a tile keeps where programs share an SM: tl.dot's k step (P @ V)
NUM_WARPS = 4  # one warpgroup: enough to issue the tile loads of a memory-bound loop
NUM_STAGES = 3  # software-pipelining depth: two K/V tiles in flight while one is consumed
# Paged grids of this many (sequence, KV head) programs and more (8+ waves on a 132-SM GPU) take
# one stage less: the buffers then let three programs share an SM, which hides the gathered loads
# at least as well as a deeper pipeline for one (sweep in results/nvidia-h100/2026-11-24-plan/)
MANY_PROGRAMS = 1024
REPORTED = ("BLOCK_N", "BLOCK_H", "D_HI", "PAGE_SIZE", "num_warps", "num_stages")  # Launch.config
# Paged split kernels an SM at least, where the ring can narrow to hold them: one alone has
# nothing to issue while its gathers wait; a third gained no more than it lost
# (results/nvidia-h200/2026-11-29-triton-share, -triton-resident). Dense rings stay (narrowed,
# short sequences were cut for the second program and lost), and so do rings of at most
# WIDE_DIMS dims (not measured narrowed; registered in -triton-resident/next24)
MIN_SPLIT_RESIDENT = 2
NARROWEST_STAGES = 2  # a ring narrows a stage at a time to this, then halves its tile


def reported(cfg: dict, problem) -> dict:
    """What Launch.config records: REPORTED and the head dim's split (``tiles_reported``), and
    on paged K/V how a tile was addressed, per page or per token (GATHER, no kernel parameter
    either)."""
    out = tiles_reported(cfg, REPORTED)
    if problem.layout == "paged":
        out["GATHER"] = "page" if cfg["PAGE_SIZE"] else "token"
    return out


def split_launch_config(problem, config: dict | None, l2_bytes: int, sms: int | None,
                        resident_of) -> tuple[dict, tuple]:
    """(split-K's config, ``resident_of(config)``): ``pick_launch_config``'s, for a paged cache
    and a tile of more than WIDE_DIMS dims its ring narrowed step by step while the compiled
    kernel would hold fewer than MIN_SPLIT_RESIDENT programs an SM (``resident_of(cfg)[0]``:
    planner.residency of the kernel compiled for ``cfg``), to the first that holds them; the
    widest one where no step does (its registers bind it, not the ring), where ``config`` sets
    the ring, for a dense cache or a narrower tile."""
    cfg = pick_launch_config(problem, config, l2_bytes, sms, split=True)
    held = resident_of(cfg)
    step = 1
    narrows = problem.layout == "paged" and cfg["D_LO"] + cfg["D_HI"] > WIDE_DIMS
    while narrows and held[0] < MIN_SPLIT_RESIDENT:
        narrower = pick_launch_config(problem, config, l2_bytes, sms, split=True, narrow=step)
        if narrower is None:
            break
        narrower_held = resident_of(narrower)
        if narrower_held[0] >= MIN_SPLIT_RESIDENT:
            return narrower, narrower_held
        step += 1
    return cfg, held


def interpreting() -> bool:
    """Triton runs kernels in its CPU interpreter (read once by Triton at import)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def compile_capped(kernel, args, grid, kwargs: dict, min_blocks: int | None, inputs):
    """(compiled kernel, min_blocks, register cap or None) of ``kernel[grid](*args, **kwargs)``
    under ``impls.plan.capped_kernel``'s register cap (the launch's ``maxnreg``); in the
    interpreter, where nothing is compiled: (None, min_blocks or 0, None)."""
    if interpreting():  # nothing compiled: the option checked all the same
        planner.check_min_blocks(min_blocks, kwargs["num_warps"])
        return None, min_blocks or 0, None
    return planner.capped_warmup(kernel, args, grid, kwargs, min_blocks, inputs, PTXASError)


def sharing_sms(device) -> int | None:
    """The SM count programs share (``pick_launch_config``'s ``sms``) on ``device``; None in the
    interpreter, which runs programs one after another: no SM to share, only more tiles."""
    return None if interpreting() else sm_count(device)


def pick_launch_config(problem, config: dict | None = None, l2_bytes: int = L2_BYTES,
                       sms: int | None = None, split: bool = False, narrow: int = 0) -> dict | None:
    """Compile-time shape of the kernels for ``problem`` on a GPU of ``l2_bytes`` of L2 and ``sms``
    SMs (no device query; launchers pass their GPU's; None: the ring sized for one program an
    SM), for split-K's kernel where ``split``; ``config`` overrides the tunable ones (``BLOCK_N``,
    ``num_warps``, ``num_stages``, ``GATHER``, ``MERGE``; ``FUSED_MERGE`` is the split kernel's
    alone). ``narrow``: steps the K/V ring takes below the one picked (a stage less down to
    NARROWEST_STAGES, then half the tile down to MIN_FITTED_BLOCK_N; ``split_launch_config``);
    None where it has no more steps, or ``config`` sets the ring."""
    head_dim_pad = triton.next_power_of_2(problem.head_dim)
    rows = problem.q_len * problem.group_size
    dim_split = (config or {}).get("DIM_SPLIT", dim_split_rule(problem))
    d_lo, d_hi = head_dim_tiles(problem.head_dim, dim_split)
    dims = d_lo + d_hi  # the tiles' dims: what registers and shared memory hold
    fit = TILE_PAIR_BYTES // (2 * dims * problem.kv_itemsize)  # tokens in one stage's K+V
    paged = problem.layout == "paged"
    q_tile_rows = MAX_Q_TILE_BYTES // (dims * problem.itemsize)  # a power of two below: the dims
    q_tile_rows = 1 << (q_tile_rows.bit_length() - 1)  # of two tiles (144 = 128 + 16) are not one
    block_h = max(MIN_BLOCK_H, min(triton.next_power_of_2(rows), max(
        q_tile_rows, triton.next_power_of_2(problem.group_size))))

    def holds(b, block_n, warps):  # the rows' accumulator and scores within a thread's floats
        budget = WIDE_THREAD_FLOATS if b > MAX_BLOCK_H and warps == WIDE_WARPS else THREAD_FLOATS
        return b * (dims + block_n) <= budget * 32 * warps
    num_warps = NUM_WARPS
    if problem.itemsize == 2:  # 16-bit queries: two warpgroups where one cannot hold the rows
        wide = block_h
        if block_h < rows and problem.kv_bytes > l2_bytes:
            most = MAX_WIDE_BLOCK_H if dims > WIDE_DIMS else MAX_BLOCK_H
            wide = min(most, triton.next_power_of_2(rows))
            # the rows for the warps and the tile asked for
            warps = (config or {}).get("num_warps", WIDE_WARPS)
            while not holds(wide, (config or {}).get("BLOCK_N", MIN_FITTED_BLOCK_N), warps):
                wide //= 2
        # (the rule's own rows may not fit 4 warps either: a group of 64 at head dim 256)
        if wide > block_h or not holds(block_h, MIN_FITTED_BLOCK_N, NUM_WARPS):
            block_h, num_warps = max(wide, block_h), WIDE_WARPS
    defaults = dict(
        HEAD_DIM=problem.head_dim,
        HEAD_DIM_PAD=head_dim_pad,  # the merges' row
        D_LO=d_lo,
        D_HI=d_hi,
        DIM_SPLIT=dim_split,
        BLOCK_H=block_h,
        BLOCK_N=min(MAX_BLOCK_N, 1 << (fit.bit_length() - 1), planner.widest_tile(problem)),
        # the CPU interpreter multiplies bf16 bit patterns in tl.dot (see attend_range)
        UPCAST_DOT=interpreting() and problem.dtype == "bfloat16",
        IS_PAGED=paged,
        KV_SCALED=problem.cache.quantised,
        SOFTCAP=problem.softcap is not None,
        ROW_SPANS=problem.q_len > 1,
        GATHER="page",
        # the merge in a kernel of its own: measured faster at batch 1 than fused into the split
        # kernel's last program (results/nvidia-h100/2026-11-24-plan/), the same elsewhere
        MERGE="kernel",
        MIN_BLOCKS=None,  # a register cap: the launcher's rule on the compiled kernel (impls.plan)
        num_warps=num_warps,
        num_stages=NUM_STAGES,  # one less on a grid of many programs: below
    )
    cfg = with_overrides(defaults, config)
    if "BLOCK_H" in (config or {}):  # rows a program: a tl.dot tile, no more than the rows need
        need = max(MIN_BLOCK_H, triton.next_power_of_2(rows))
        b = cfg["BLOCK_H"]
        if not isinstance(b, int) or b < MIN_BLOCK_H or b & (b - 1) or b > need:
            raise ProblemError(f"config: BLOCK_H={b!r}: must be a power of two from {MIN_BLOCK_H} "
                               f"(tl.dot's rows) to {need} (the {rows} query rows of a KV head, "
                               "padded)")
    # the grid of whole sequences, by the rows a program takes
    programs = problem.batch * problem.num_kv_heads * num_head_blocks(problem, cfg["BLOCK_H"])
    if "num_stages" not in (config or {}):
        cfg["num_stages"] = NUM_STAGES - 1 if paged and programs >= MANY_PROGRAMS else NUM_STAGES

    def smem(block_n):  # K/V stages, the q tile and (fp8) a converted tile: ptxas's count for
        # sm_90's warpgroup-MMA kernels (tests/triton_sm90.py), a stage more than mma_v2's hold
        converted = block_n if problem.cache.quantised else 0
        return ((cfg["num_stages"] * block_n * 2 * problem.kv_itemsize
                 + (cfg["BLOCK_H"] + converted) * problem.itemsize) * dims)
    if "BLOCK_N" not in (config or {}):  # narrower while the registers or shared memory overflow
        while cfg["BLOCK_N"] > MIN_FITTED_BLOCK_N and (
                not holds(cfg["BLOCK_H"], cfg["BLOCK_N"], cfg["num_warps"])
                or smem(cfg["BLOCK_N"]) > SMEM_BYTES):
            cfg["BLOCK_N"] //= 2
        # ... and, for a one-warpgroup program of one 16-row tile whose tokens would not fill its
        # ring (or, near-uniform one-pass, that reads little: impls.plan.SHORT_PROGRAM_BYTES), of
        # a grid with no tail (impls.plan.short_programs), while the grid's programs an
        # SM (whole sequences) would not be resident together by this count
        # (impls.plan.MAX_SHARERS; an upper bound: the compiled mma_v2 kernels hold a stage less,
        # so as many or more are). A ring that fills streams best alone with wide
        # tiles: shared everywhere, dense batches of long sequences ran 4-14 % slower
        # (results/nvidia-h100/2026-11-27-sharers), where sharing could not make the grid
        # resident. Wider programs are left alone: their registers, not shared memory, bound them.
        # Split-K's planner then sizes its items by the residency this gives, and may cut more.
        # A one-pass grid of near-uniform programs shares too where its last wave would run
        # part-empty (impls.plan.resident_grid), the head dim in one tile: with two (D_HI), 5 of
        # 6 such rows ran 4-29 % slower (results/nvidia-h200/2026-11-27-resident-grid). The
        # programs it holds now by shared memory (mma_v2 kernels hold a stage less than smem();
        # registers are unknown before the compile):
        ring = smem(cfg["BLOCK_N"]) - cfg["BLOCK_N"] * 2 * problem.kv_itemsize * dims
        held = planner.residency(0, ring, cfg["num_warps"])
        if sms and cfg["BLOCK_H"] == MIN_BLOCK_H and cfg["num_warps"] == NUM_WARPS and (
                planner.short_programs(problem, programs, sms,
                                       cfg["num_stages"] * cfg["BLOCK_N"], split)
                or (not split and not d_hi and planner.resident_grid(problem, programs, sms, held))):
            share = planner.shared_bytes_each(planner.sharers(programs, sms))
            while cfg["BLOCK_N"] > MIN_SHARED_BLOCK_N and smem(cfg["BLOCK_N"]) > share:
                cfg["BLOCK_N"] //= 2
    if narrow and ("BLOCK_N" in (config or {}) or "num_stages" in (config or {})):
        return None
    for _ in range(narrow):
        if cfg["num_stages"] > NARROWEST_STAGES:
            cfg["num_stages"] -= 1
        elif cfg["BLOCK_N"] > MIN_FITTED_BLOCK_N:
            cfg["BLOCK_N"] //= 2
        else:
            return None
    if problem.itemsize == 2 and smem(cfg["BLOCK_N"]) > SMEM_BYTES:  # (32-bit: over-counted)
        raise ProblemError(f"config: BLOCK_H={cfg['BLOCK_H']}, BLOCK_N={cfg['BLOCK_N']}, num_stages="
                           f"{cfg['num_stages']}: {smem(cfg['BLOCK_N'])} B of shared memory, more "
                           f"than a program has on sm_90 ({SMEM_BYTES} B)")
    del cfg["DIM_SPLIT"]  # a tunable, not a kernel parameter: it picks D_LO and D_HI
    gather = cfg.pop("GATHER")  # a tunable, not a kernel parameter: it picks PAGE_SIZE
    if gather not in ("page", "token"):
        raise ProblemError(f"config: GATHER={gather!r}: must be 'page' or 'token'")
    merge = cfg.pop("MERGE")  # split-K: in the split kernel's last program, or a kernel of its own
    if merge not in ("fused", "kernel"):
        raise ProblemError(f"config: MERGE={merge!r}: must be 'fused' or 'kernel'")
    cfg["FUSED_MERGE"] = merge == "fused"
    ps, tile = problem.page_size, cfg["BLOCK_N"]
    per_page = paged and gather == "page" and (tile % ps == 0 or ps % tile == 0)
    return {**cfg, "PAGE_SIZE": ps if per_page else 0}

