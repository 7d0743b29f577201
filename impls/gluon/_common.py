"""Gluon building blocks shared by the one-pass and split-K decode kernels.

The kernels do what ``impls/triton/_common.py`` does (one program per (sequence or work item,
KV head); the GQA group as one ``[BLOCK_H, HEAD_DIM_PAD]`` tile of >= 16 rows, so each K/V tile
is read once per group and both products run on the tensor cores; online softmax in the log2
domain), one level lower, with every choice Triton's compiler makes written out:

- **An explicit K/V ring in shared memory**, ``NUM_STAGES`` slots, ``NUM_STAGES - 1`` tiles in
  flight while one is consumed, filled one of two ways (``DENSE_TMA``; the split-K launcher
  picks TMA for dense tiles, the one-pass launcher cp.async). TMA: each K and V tile is one bulk
  copy (a 4-d box of the ``[batch, max_seq_len, Hkv, D]`` cache; zero fill past the cache and
  past ``HEAD_DIM``), its arrival counted in bytes on the slot's mbarrier, so no thread computes
  a row address. cp.async (paged tiles always: Hopper's TMA has no gather): 16-byte vectors,
  masked rows zero-filled, stages synchronised with ``wait_group``. Either way nothing passes
  through registers. Triton 3.6 does not multi-buffer these loads (their range is a runtime
  [start, end) and, paged, their rows come through the block table): it loads each tile to
  registers, then stores it to shared memory for ``mma``.
- **Page-granular gathers, prefetched.** Paged rows are addressed through the block table; the
  table entries of a tile are loaded one iteration before its copies are issued, so the table
  read's latency never stalls the copy issue. Where the page size divides the tile or the tile
  divides it (``PAGE_SIZE`` constexpr) the entry index is a shift, else a division by the
  runtime ``page_size``.
- **``mma_v2`` with explicit layouts.** Scores ``q K^T`` and ``P V`` on the m16n8k16 tensor-core
  instruction, fragments read from a swizzled shared layout (``ldmatrix``), float32 accumulators;
  ``wgmma`` takes 64 rows, four times a decode step's padded group. ``WGMMA=1`` (``wgmma_rule``:
  more than 16 rows a KV head and 4 MiB of K/V or more; or the ``wgmma`` knob): both products on
  the warpgroup MMA, a program's 64 rows in one tile, its operands read from shared memory.
- **The head dim in two tiles** (``D_HI`` > 0, ``impls.common.head_dim_tiles``): 144 as 128 +
  16 rather than one tile padded to 256, each tile in its own ring, the scores summed.

The cp.async path reads both KV layouts as ``[page, row, kv_head, dim]`` tensors (strides
``stride_kp``, ``stride_kt``, ``stride_kh``): paged, page = the block table's entry; dense,
page = the sequence.
"""

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy, mma_v2
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma,
                                                             warpgroup_mma)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from impls.common import LN2 as _LN2
from impls.common import LOG2E as _LOG2E
from impls.common import TANH_SERIES_BELOW as _TANH_SERIES_BELOW
from impls import plan as planner
from impls.common import (L2_BYTES, SMEM_BYTES, dim_split_rule, fp8_to_bf16_ptx, head_dim_tiles,
                          tiles_reported, with_overrides)
from specs.problem import ProblemError

LN2 = gl.constexpr(_LN2)
LOG2E = gl.constexpr(_LOG2E)
TANH_SERIES_BELOW = gl.constexpr(_TANH_SERIES_BELOW)
E4M3_TO_BF16 = gl.constexpr(fp8_to_bf16_ptx(3))
E5M2_TO_BF16 = gl.constexpr(fp8_to_bf16_ptx(2))
COPY_BYTES = 16  # one cp.async vector: the widest the instruction copies
TORCH_TO_GL = {torch.bfloat16: gl.bfloat16, torch.float16: gl.float16,
               torch.float8_e4m3fn: gl.float8e4nv, torch.float8_e5m2: gl.float8e5}


@gluon.constexpr_function
def tile_layout(head_dim_pad, element_bits, num_warps):
    """Registers of a [rows, HEAD_DIM_PAD] tile's copies: 16-byte vectors, a warp's lanes along
    the row first, so each row is read in whole 32-byte sectors."""
    vec = COPY_BYTES * 8 // element_bits
    lanes_d = min(32, head_dim_pad // vec)
    return gl.BlockedLayout([1, vec], [32 // lanes_d, lanes_d], [num_warps, 1], [1, 0])


@gluon.constexpr_function
def acc_layout(wgmma, columns, num_warps):
    """The accumulator of a product ``columns`` wide (tokens for the scores, a tile's head dims
    for the output): mma_v2's m16n8k16, the warps side by side along the columns (the group's
    16 rows are all one MMA tile high), or with ``wgmma`` Hopper's warpgroup MMA, the warps down
    the rows (16 a warp: 64 rows a warpgroup) and one instruction across the columns."""
    if wgmma:
        return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                         instr_shape=[16, columns, 16])
    return gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[1, num_warps],
                                     instr_shape=[16, 8])


@gluon.constexpr_function
def ring_layout(wgmma, block_n, dims, dtype):
    """K/V ring slots: 16-byte chunks XOR-swizzled over 8 rows, so the 8 row addresses of an
    ``ldmatrix`` fall in 8 different bank groups, or with ``wgmma`` the layout the warpgroup MMA
    reads its shared operands in (the TMA descriptors' default)."""
    if wgmma:
        return gl.NVMMASharedLayout.get_default_for([block_n, dims], dtype)
    return gl.SwizzledSharedLayout(COPY_BYTES * 8 // dtype.primitive_bitwidth, 1, 8, order=[1, 0])


@gluon.jit
def tile_rows(pid_b, tile_start, offs_n, first, end, block_table_ptr, stride_btb, page_size,
              IS_PAGED: gl.constexpr, PAGE_SIZE: gl.constexpr):
    """(page, row) of the tile's tokens ``tile_start + offs_n`` and which are in [first, end);
    paged entries outside are not read (page 0, masked)."""
    tokens = tile_start + offs_n
    mask_n = (tokens < end) & (tokens >= first)
    if IS_PAGED and PAGE_SIZE > 0:  # a compile-time page size: a constant division
        page = gl.load(block_table_ptr + pid_b * stride_btb + tokens // PAGE_SIZE, mask=mask_n,
                       other=0)
        return page.to(gl.int64), (tokens % PAGE_SIZE).to(gl.int64), mask_n
    elif IS_PAGED:
        page = gl.load(block_table_ptr + pid_b * stride_btb + tokens // page_size, mask=mask_n,
                       other=0)
        return page.to(gl.int64), (tokens % page_size).to(gl.int64), mask_n
    # int64: token x row stride overflows int32 past 2^31 elements (MHA at 512k tokens)
    return pid_b.to(gl.int64) + gl.zeros_like(tokens).to(gl.int64), tokens.to(gl.int64), mask_n


@gluon.jit
def issue_tile(k_slot, v_slot, k_ptr, v_ptr, page, row, mask_n, kvh_off, offs_d, mask_d,
               stride_kp, stride_kt):
    """cp.async the tile's K and V rows into one ring slot (masked elements are zero-filled and
    not read: no poisoned row or page is touched)."""
    row_off = page * stride_kp + row * stride_kt + kvh_off
    offs = row_off[:, None] + offs_d[None, :]
    mask = mask_n[:, None] & mask_d[None, :]
    async_copy.async_copy_global_to_shared(k_slot, k_ptr + offs, mask=mask)
    async_copy.async_copy_global_to_shared(v_slot, v_ptr + offs, mask=mask)


@gluon.jit
def issue_tiles(k_ring, v_ring, k_hi_ring, v_hi_ring, slot, k_ptr, v_ptr, page, row, mask_n,
                kvh_off, stride_kp, stride_kt, HEAD_DIM: gl.constexpr, D_LO: gl.constexpr,
                D_HI: gl.constexpr):
    """cp.async a tile's rows into ring slot ``slot``: dims [0, D_LO) and, where ``D_HI`` > 0,
    [D_LO, D_LO + D_HI) into the second tile's rings, each tile in its own copy layout (the rows'
    addresses moved to it)."""
    dtype: gl.constexpr = k_ptr.dtype.element_ty
    LOAD: gl.constexpr = tile_layout(D_LO, dtype.primitive_bitwidth, gl.num_warps())
    offs_d = gl.arange(0, D_LO, gl.SliceLayout(0, LOAD))
    issue_tile(k_ring.index(slot), v_ring.index(slot), k_ptr, v_ptr, page, row, mask_n, kvh_off,
               offs_d, offs_d < HEAD_DIM, stride_kp, stride_kt)
    if D_HI > 0:
        LOAD_HI: gl.constexpr = tile_layout(D_HI, dtype.primitive_bitwidth, gl.num_warps())
        ROWS_HI: gl.constexpr = gl.SliceLayout(1, LOAD_HI)
        offs_hi = D_LO + gl.arange(0, D_HI, gl.SliceLayout(0, LOAD_HI))
        issue_tile(k_hi_ring.index(slot), v_hi_ring.index(slot), k_ptr, v_ptr,
                   gl.convert_layout(page, ROWS_HI), gl.convert_layout(row, ROWS_HI),
                   gl.convert_layout(mask_n, ROWS_HI), kvh_off, offs_hi, offs_hi < HEAD_DIM,
                   stride_kp, stride_kt)


@gluon.jit
def widen(x, dtype: gl.constexpr):
    """Fragments of a K/V tile in ``dtype`` (the query's): an fp8 tile widened exactly, to bf16
    by bit operations (``impls.common.fp8_to_bf16_ptx``), to fp16 by the one-instruction cvt."""
    if x.dtype == dtype:
        y = x
    elif dtype == gl.bfloat16 and x.dtype == gl.float8e5:
        y = gl.inline_asm_elementwise(E5M2_TO_BF16, "=r,=r,r", [x.to(gl.uint8, bitcast=True)],
                                      dtype=gl.bfloat16, is_pure=True, pack=4)
    elif dtype == gl.bfloat16:
        y = gl.inline_asm_elementwise(E4M3_TO_BF16, "=r,=r,r", [x.to(gl.uint8, bitcast=True)],
                                      dtype=gl.bfloat16, is_pure=True, pack=4)
    else:
        y = x.to(dtype)
    return y


@gluon.jit
def tanh(x):
    """tanh to ~2^-21 relative, as ``impls.common.TANH_SERIES_BELOW`` says: from one exp2 of
    -2|x| (no overflow), or a series below |x| = 1/16, where 1 - exp2 cancels."""
    ax = gl.abs(x)
    e = gl.exp2(-2.0 * LOG2E * ax)
    x2 = x * x
    t = gl.where(ax < TANH_SERIES_BELOW, ax * (1.0 - x2 * (1.0 / 3.0 - x2 * (2.0 / 15.0))),
                 (1.0 - e) / (1.0 + e))
    return gl.where(x < 0, -t, t)


@gluon.jit
def softmax_step(q, q_hi, k_tile, k_hi, v_tile, v_hi, tile_start, first, end, row_first,
                 row_end, softcap, qk_scale, m_i, l_i, acc, acc_hi, SOFTCAP: gl.constexpr,
                 ROW_SPANS: gl.constexpr, D_HI: gl.constexpr, WGMMA: gl.constexpr):
    """One online-softmax step over a landed ``[BLOCK_N, HEAD_DIM_PAD]`` K/V tile in shared
    memory whose first token is ``tile_start``: tokens outside [first, end) are masked out of
    the scores (their V rows must hold finite values), and with ``ROW_SPANS`` (a multi-token
    query) those outside each row's own [row_first, row_end); ``SOFTCAP``: each score s (log2
    units) becomes softcap * tanh(s / softcap), ``softcap`` in log2 units too. The updated
    (m_i, l_i, acc). An fp8 tile is converted to the query's dtype as its
    fragments leave shared memory (exact: every fp8 value is a bf16 and an fp16 value), so both
    products stay 16-bit mma_v2. ``D_HI`` > 0: the head dim's second tile (``q_hi``, ``k_hi``,
    ``v_hi``, ``acc_hi``; else None and a placeholder) adds to the scores and has its own
    accumulator. ``WGMMA``: both products on Hopper's warpgroup MMA (``acc_layout``), its shared
    operands read in place (16-bit tiles only)."""
    dtype: gl.constexpr = q.dtype
    BLOCK_H: gl.constexpr = q.shape[0]
    BLOCK_N: gl.constexpr = k_tile.shape[0]
    MMA: gl.constexpr = acc_layout(WGMMA, BLOCK_N, gl.num_warps())  # the scores'
    OUT: gl.constexpr = acc_layout(WGMMA, acc.shape[1], gl.num_warps())
    K_WIDTH: gl.constexpr = 32 // dtype.primitive_bitwidth  # operand elements per 32-bit register
    A_OP: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=OUT, k_width=K_WIDTH)
    B_OP: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=MMA, k_width=K_WIDTH)
    if WGMMA:
        s = warpgroup_mma(q, k_tile.permute([1, 0]), gl.zeros([BLOCK_H, BLOCK_N], gl.float32, MMA),
                          use_acc=False)
        if D_HI > 0:
            s = warpgroup_mma(q_hi, k_hi.permute([1, 0]), s)
    else:
        k = widen(k_tile.permute([1, 0]).load(B_OP), dtype)  # K^T fragments (ldmatrix if 16-bit)
        s = mma_v2(q, k, gl.zeros([BLOCK_H, BLOCK_N], gl.float32, MMA))
        if D_HI > 0:
            s = mma_v2(q_hi, widen(k_hi.permute([1, 0]).load(B_OP), dtype), s)
    m_new, l_i, p, alpha = online_update(s, tile_start, first, end, row_first, row_end, softcap,
                                         qk_scale, m_i, l_i, SOFTCAP, ROW_SPANS)
    # P V in the input dtype on the tensor cores, float32 accumulation
    if WGMMA:
        p = p.to(dtype)
        acc = warpgroup_mma(gl.convert_layout(p, A_OP), v_tile,
                            acc * gl.convert_layout(alpha, gl.SliceLayout(1, OUT))[:, None])
        if D_HI > 0:
            HI: gl.constexpr = acc_layout(WGMMA, D_HI, gl.num_warps())
            acc_hi = warpgroup_mma(
                gl.convert_layout(p, gl.DotOperandLayout(operand_index=0, parent=HI, k_width=K_WIDTH)),
                v_hi, acc_hi * gl.convert_layout(alpha, gl.SliceLayout(1, HI))[:, None])
    else:
        v = widen(v_tile.load(B_OP), dtype)
        p = gl.convert_layout(p.to(dtype), A_OP)
        acc = mma_v2(p, v, acc * alpha[:, None])
        if D_HI > 0:
            acc_hi = mma_v2(p, widen(v_hi.load(B_OP), dtype), acc_hi * alpha[:, None])
    return m_new, l_i, acc, acc_hi


@gluon.jit
def online_update(s, tile_start, first, end, row_first, row_end, softcap, qk_scale, m_i, l_i,
                  SOFTCAP: gl.constexpr, ROW_SPANS: gl.constexpr):
    """``softmax_step``'s online softmax over a tile's unscaled scores ``s`` (masked and capped as
    it says): (m_new, l_i, p, alpha), p still float32, alpha the accumulators' rescale."""
    BLOCK_N: gl.constexpr = s.shape[1]
    tokens = tile_start + gl.arange(0, BLOCK_N, gl.SliceLayout(0, s.type.layout))
    valid = (tokens < end) & (tokens >= first)
    s = s * qk_scale
    if SOFTCAP:
        s = softcap * tanh(s / softcap)
    if ROW_SPANS:  # each query token's own causal span, and a row that has seen nothing
        seen = (tokens[None, :] >= row_first[:, None]) & (tokens[None, :] < row_end[:, None])
        s = gl.where(seen & valid[None, :], s, float("-inf"))
    else:
        s = gl.where(valid[None, :], s, float("-inf"))
    m_new = gl.maximum(m_i, gl.max(s, 1))
    m_ref = m_new
    if ROW_SPANS:  # a row that has seen nothing: exponentials against 0 (no NaN), its max kept
        # -inf (a 0 kept as its max would underflow its later p's in the 16-bit pack)
        m_ref = gl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = gl.exp2(m_i - m_ref)
    p = gl.exp2(s - m_ref[:, None])
    l_i = l_i * alpha + gl.sum(p, 1)
    return m_new, l_i, p, alpha


@gluon.jit
def stream_gathered(q, q_hi, k_ptr, v_ptr, block_table_ptr, pid_b, kvh_off, start, end, first,
                    row_first, row_end, softcap, stride_kp, stride_kt, stride_btb, page_size,
                    qk_scale, m_i, l_i, acc, acc_hi, HEAD_DIM: gl.constexpr,
                    HEAD_DIM_PAD: gl.constexpr, D_HI: gl.constexpr, BLOCK_N: gl.constexpr,
                    IS_PAGED: gl.constexpr, PAGE_SIZE: gl.constexpr, NUM_STAGES: gl.constexpr,
                    SOFTCAP: gl.constexpr, ROW_SPANS: gl.constexpr, WGMMA: gl.constexpr):
    """Tokens [start, end) through a ``NUM_STAGES``-slot cp.async ring, rows addressed one by
    one (through the block table when paged), those before ``first`` (a window's start) masked:
    masked rows are zero-filled, never read. ``D_HI`` > 0: a second ring of the dims from
    ``HEAD_DIM_PAD`` on, filled in the same copy groups."""
    dtype: gl.constexpr = k_ptr.dtype.element_ty
    LOAD: gl.constexpr = tile_layout(HEAD_DIM_PAD, dtype.primitive_bitwidth, gl.num_warps())
    SMEM: gl.constexpr = ring_layout(WGMMA, BLOCK_N, HEAD_DIM_PAD, dtype)
    k_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES, BLOCK_N, HEAD_DIM_PAD], SMEM)
    v_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES, BLOCK_N, HEAD_DIM_PAD], SMEM)
    k_hi_ring = None
    v_hi_ring = None
    if D_HI > 0:
        SMEM_HI: gl.constexpr = ring_layout(WGMMA, BLOCK_N, D_HI, dtype)
        k_hi_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES, BLOCK_N, D_HI], SMEM_HI)
        v_hi_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES, BLOCK_N, D_HI], SMEM_HI)
    offs_n = gl.arange(0, BLOCK_N, gl.SliceLayout(1, LOAD))
    num_tiles = gl.cdiv(end - start, BLOCK_N)

    # Prologue: tiles 0 .. NUM_STAGES - 2 in flight (a tile past the range is fully masked: an
    # empty copy group, which keeps the group count uniform), and the next tile's rows looked up.
    for i in gl.static_range(NUM_STAGES - 1):
        page, row, mask_n = tile_rows(pid_b, start + i * BLOCK_N, offs_n, first, end,
                                      block_table_ptr, stride_btb, page_size, IS_PAGED, PAGE_SIZE)
        issue_tiles(k_ring, v_ring, k_hi_ring, v_hi_ring, i, k_ptr, v_ptr, page, row, mask_n,
                    kvh_off, stride_kp, stride_kt, HEAD_DIM, HEAD_DIM_PAD, D_HI)
        async_copy.commit_group()
    next_page, next_row, next_mask = tile_rows(pid_b, start + (NUM_STAGES - 1) * BLOCK_N, offs_n,
                                               first, end, block_table_ptr, stride_btb, page_size,
                                               IS_PAGED, PAGE_SIZE)
    for i in range(num_tiles):
        # Tile i landed once at most NUM_STAGES - 2 newer copy groups are pending; the barrier
        # makes every warp's copies visible and frees the slot read in the previous iteration.
        async_copy.wait_group(NUM_STAGES - 2)
        if WGMMA:  # cp.async's writes (the generic proxy) before the MMA reads them (the async one)
            fence_async_shared()
        gl.thread_barrier()
        refill = (i + NUM_STAGES - 1) % NUM_STAGES
        issue_tiles(k_ring, v_ring, k_hi_ring, v_hi_ring, refill, k_ptr, v_ptr, next_page,
                    next_row, next_mask, kvh_off, stride_kp, stride_kt, HEAD_DIM, HEAD_DIM_PAD,
                    D_HI)
        async_copy.commit_group()
        next_page, next_row, next_mask = tile_rows(pid_b, start + (i + NUM_STAGES) * BLOCK_N,
                                                   offs_n, first, end, block_table_ptr,
                                                   stride_btb, page_size, IS_PAGED, PAGE_SIZE)
        stage = i % NUM_STAGES
        k_hi = None
        v_hi = None
        if D_HI > 0:
            k_hi = k_hi_ring.index(stage)
            v_hi = v_hi_ring.index(stage)
        m_i, l_i, acc, acc_hi = softmax_step(q, q_hi, k_ring.index(stage), k_hi,
                                             v_ring.index(stage), v_hi, start + i * BLOCK_N,
                                             first, end, row_first, row_end, softcap, qk_scale,
                                             m_i, l_i, acc, acc_hi, SOFTCAP, ROW_SPANS, D_HI,
                                             WGMMA)
    async_copy.wait_group(0)  # no copy outlives the program's shared memory
    return m_i, l_i, acc, acc_hi


@gluon.jit
def stream_tma(q, q_hi, k_desc, v_desc, k_hi_desc, v_hi_desc, pid_b, pid_kvh, start, end, first,
               row_first, row_end, softcap, qk_scale, m_i, l_i, acc, acc_hi,
               NUM_STAGES: gl.constexpr, SOFTCAP: gl.constexpr, ROW_SPANS: gl.constexpr,
               D_HI: gl.constexpr, WGMMA: gl.constexpr):
    """Tokens [start, end) of a dense cache through a ``NUM_STAGES``-slot ring filled by TMA:
    one bulk copy per K and V tile (box ``[1, BLOCK_N, 1, HEAD_DIM_PAD]`` of the
    ``[batch, max_seq_len, Hkv, D]`` descriptor; dims past ``HEAD_DIM`` and rows past the cache
    are zero-filled), its arrival counted in bytes on the slot's mbarrier. A tile reaching past
    ``end``, or starting before ``first`` (a window's start), brings rows that may be poison:
    their V rows are zeroed in shared memory (and their scores masked, as in the ring).
    ``D_HI`` > 0: the dims from ``HEAD_DIM_PAD`` on come by the second descriptors (box
    ``[1, BLOCK_N, 1, D_HI]``) into rings of their own, counted on the same mbarrier."""
    dtype: gl.constexpr = k_desc.dtype
    BLOCK_N: gl.constexpr = k_desc.block_shape[1]
    HEAD_DIM_PAD: gl.constexpr = k_desc.block_shape[3]
    # a box's bytes count in full, its zero-filled part included
    TILE_BYTES: gl.constexpr = BLOCK_N * (HEAD_DIM_PAD + D_HI) * dtype.primitive_bitwidth // 8
    k_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES] + k_desc.block_shape, k_desc.layout)
    v_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES] + v_desc.block_shape, v_desc.layout)
    k_hi_ring = None
    v_hi_ring = None
    if D_HI > 0:
        gl.static_assert(k_hi_desc.block_shape[3] == D_HI, "the second tile's descriptors: D_HI wide")
        k_hi_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES] + k_hi_desc.block_shape,
                                              k_hi_desc.layout)
        v_hi_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES] + v_hi_desc.block_shape,
                                              v_hi_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(ready.index(i), count=1)
    fence_async_shared()  # the initialised barriers visible to the TMA unit before its first copy
    num_tiles = gl.cdiv(end - start, BLOCK_N)

    for i in gl.static_range(NUM_STAGES - 1):  # prologue: the first tiles in flight
        issue_tma(k_desc, v_desc, k_hi_desc, v_hi_desc, k_ring, v_ring, k_hi_ring, v_hi_ring,
                  ready.index(i), i, pid_b, start + i * BLOCK_N, pid_kvh, 2 * TILE_BYTES,
                  i < num_tiles, HEAD_DIM_PAD, D_HI)
    for i in range(num_tiles):
        # The barrier frees the slot every warp read in the previous iteration for its refill,
        # and keeps its mbarrier from being re-armed before every warp has seen its last phase.
        gl.thread_barrier()
        refill = (i + NUM_STAGES - 1) % NUM_STAGES
        issue_tma(k_desc, v_desc, k_hi_desc, v_hi_desc, k_ring, v_ring, k_hi_ring, v_hi_ring,
                  ready.index(refill), refill, pid_b, start + (i + NUM_STAGES - 1) * BLOCK_N,
                  pid_kvh, 2 * TILE_BYTES, i + NUM_STAGES - 1 < num_tiles, HEAD_DIM_PAD, D_HI)
        stage = i % NUM_STAGES
        mbarrier.wait(ready.index(stage), (i // NUM_STAGES) & 1)  # the slot's n-th fill landed
        k_tile = k_ring.index(stage).reshape([BLOCK_N, HEAD_DIM_PAD])
        v_tile = v_ring.index(stage).reshape([BLOCK_N, HEAD_DIM_PAD])
        k_hi = None
        v_hi = None
        if D_HI > 0:
            k_hi = k_hi_ring.index(stage).reshape([BLOCK_N, D_HI])
            v_hi = v_hi_ring.index(stage).reshape([BLOCK_N, D_HI])
        tile_start = start + i * BLOCK_N
        if (tile_start + BLOCK_N > end) | (tile_start < first):  # zero V rows outside the range
            zero_outside(v_tile, tile_start, first, end)
            if D_HI > 0:
                zero_outside(v_hi, tile_start, first, end)
            # these stores (the generic proxy) before the slot's next TMA fill (the async one)
            fence_async_shared()
            gl.thread_barrier()
        m_i, l_i, acc, acc_hi = softmax_step(q, q_hi, k_tile, k_hi, v_tile, v_hi, tile_start,
                                             first, end, row_first, row_end, softcap, qk_scale,
                                             m_i, l_i, acc, acc_hi, SOFTCAP, ROW_SPANS, D_HI,
                                             WGMMA)
    for i in gl.static_range(NUM_STAGES):
        mbarrier.invalidate(ready.index(i))
    return m_i, l_i, acc, acc_hi


@gluon.jit
def zero_outside(v_tile, tile_start, first, end):
    """Zero the rows of a landed ``[BLOCK_N, dims]`` V tile outside tokens [first, end) (in the
    tile's copy layout): a TMA box brings whole rows, poison past the sequence's end or before a
    window's start included, and a zero probability does not cancel a NaN in the product."""
    LOAD: gl.constexpr = tile_layout(v_tile.shape[1], v_tile.dtype.primitive_bitwidth,
                                     gl.num_warps())
    rows = tile_start + gl.arange(0, v_tile.shape[0], gl.SliceLayout(1, LOAD))
    v_rows = v_tile.load(LOAD)
    v_tile.store(gl.where(((rows < end) & (rows >= first))[:, None], v_rows, gl.zeros_like(v_rows)))


@gluon.jit
def issue_tma(k_desc, v_desc, k_hi_desc, v_hi_desc, k_ring, v_ring, k_hi_ring, v_hi_ring, bar,
              slot, pid_b, tile_start, pid_kvh, nbytes, pred, D_LO: gl.constexpr,
              D_HI: gl.constexpr):
    """Start the TMA copies of one K and one V tile into ring slot ``slot`` (and, where ``D_HI``
    > 0, of their dims from ``D_LO`` on into the second rings), all counted on ``bar``."""
    mbarrier.expect(bar, nbytes, pred=pred)
    at = [pid_b, tile_start, pid_kvh, 0]
    tma.async_copy_global_to_shared(k_desc, at, bar, k_ring.index(slot), pred=pred)
    tma.async_copy_global_to_shared(v_desc, at, bar, v_ring.index(slot), pred=pred)
    if D_HI > 0:
        at_hi = [pid_b, tile_start, pid_kvh, D_LO]
        tma.async_copy_global_to_shared(k_hi_desc, at_hi, bar, k_hi_ring.index(slot), pred=pred)
        tma.async_copy_global_to_shared(v_hi_desc, at_hi, bar, v_hi_ring.index(slot), pred=pred)


@gluon.jit
def attend(q_ptr, k_ptr, v_ptr, k_desc, v_desc, k_hi_desc, v_hi_desc, block_table_ptr, pid_b,
           pid_kvh, start, end, group_size, stride_qb, stride_qh, stride_kp, stride_kt, stride_kh,
           stride_btb, page_size, qk_scale, k_scale_ptr, v_scale_ptr, scale_stride, seq_len,
           window, softcap, q_len, row0, HEAD_DIM: gl.constexpr, HEAD_DIM_PAD: gl.constexpr,
           D_HI: gl.constexpr, BLOCK_H: gl.constexpr, BLOCK_N: gl.constexpr, IS_PAGED: gl.constexpr,
           PAGE_SIZE: gl.constexpr, NUM_STAGES: gl.constexpr, DENSE_TMA: gl.constexpr,
           KV_SCALED: gl.constexpr, SOFTCAP: gl.constexpr, ROW_SPANS: gl.constexpr,
           WGMMA: gl.constexpr):
    """Attention of KV head ``pid_kvh``'s query rows ``row0 + [0, BLOCK_H)`` (row r: query
    token r // group_size, head r % group_size; rows past q_len x group_size are padding) over
    tokens [start, end) of a sequence of ``seq_len``: query token i sees the tokens below
    seq_len - q_len + i + 1, its last ``window`` of them (all: int32's largest). The range is cut
    to start no earlier than the tile of the block's first row's window and to end at its last
    row's token. The head dim as a tile of ``HEAD_DIM_PAD`` dims and, where ``D_HI`` > 0, a
    second of the next ``D_HI`` (``head_dim_tiles``). (out, out of the second tile's dims or a
    placeholder, lse) in ``acc_layout``'s layouts (``WGMMA``: the warpgroup MMA's), out
    normalised, lse natural-log; an empty row gives 0 and -inf. Dense caches stream by TMA
    (``k_desc``, ``v_desc``, and ``k_hi_desc``, ``v_hi_desc`` for the second tile) unless
    ``DENSE_TMA`` is 0, paged ones by cp.async gathers (descriptors None).
    An fp8 cache (``KV_SCALED``): K's scale folds into the score scale and V's into the output,
    one float32 product each (``scale_stride`` 1: a scale per KV head; 0: one for all)."""
    dtype: gl.constexpr = q_ptr.dtype.element_ty
    LOAD: gl.constexpr = tile_layout(HEAD_DIM_PAD, dtype.primitive_bitwidth, gl.num_warps())
    MMA: gl.constexpr = acc_layout(WGMMA, BLOCK_N, gl.num_warps())  # the scores'
    OUT: gl.constexpr = acc_layout(WGMMA, HEAD_DIM_PAD, gl.num_warps())
    A_OP: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA,
                                             k_width=32 // dtype.primitive_bitwidth)
    rows = row0 + gl.arange(0, BLOCK_H, gl.SliceLayout(1, LOAD))
    offs_d = gl.arange(0, HEAD_DIM_PAD, gl.SliceLayout(0, LOAD))
    token = pid_b * q_len + rows // group_size
    heads = pid_kvh * group_size + rows % group_size
    q_rows = token[:, None] * stride_qb + heads[:, None] * stride_qh
    mask_h = rows < q_len * group_size
    q = gl.load(q_ptr + q_rows + offs_d[None, :],
                mask=mask_h[:, None] & (offs_d < HEAD_DIM)[None, :], other=0.0)
    if WGMMA:  # the rows in shared memory, read from there by every score product: no registers
        q = gl.allocate_shared_memory(dtype, [BLOCK_H, HEAD_DIM_PAD],
                                      ring_layout(WGMMA, BLOCK_H, HEAD_DIM_PAD, dtype), q)
    else:
        q = gl.convert_layout(q, A_OP)
    m_i = gl.full([BLOCK_H], float("-inf"), gl.float32, gl.SliceLayout(1, MMA))
    l_i = gl.zeros([BLOCK_H], gl.float32, gl.SliceLayout(1, MMA))
    acc = gl.zeros([BLOCK_H, HEAD_DIM_PAD], gl.float32, OUT)
    q_hi = None
    acc_hi = gl.zeros([BLOCK_H, 16], gl.float32, MMA)  # a placeholder, unless D_HI > 0
    if D_HI > 0:
        offs_hi = HEAD_DIM_PAD + gl.arange(0, D_HI, gl.SliceLayout(0, LOAD))
        q_hi = gl.load(q_ptr + q_rows + offs_hi[None, :],
                       mask=mask_h[:, None] & (offs_hi < HEAD_DIM)[None, :], other=0.0)
        if WGMMA:
            q_hi = gl.allocate_shared_memory(dtype, [BLOCK_H, D_HI],
                                             ring_layout(WGMMA, BLOCK_H, D_HI, dtype), q_hi)
        else:
            q_hi = gl.convert_layout(q_hi, A_OP)
        acc_hi = gl.zeros([BLOCK_H, D_HI], gl.float32, acc_layout(WGMMA, D_HI, gl.num_warps()))
    if WGMMA:  # the query's stores (the generic proxy) before the MMA reads them (the async one)
        fence_async_shared()
    if KV_SCALED:
        qk_scale = qk_scale * gl.load(k_scale_ptr + pid_kvh * scale_stride)
    # each row's span; the block's first row sees from the earliest token, its last to the latest
    row_end = seq_len - q_len + 1 + (row0 + gl.arange(0, BLOCK_H, gl.SliceLayout(1, MMA))) // group_size
    row_first = gl.maximum(row_end - window, 0)
    start, end, first = block_span(start, end, seq_len, window, q_len, group_size, row0, BLOCK_H,
                                   BLOCK_N)
    if IS_PAGED or not DENSE_TMA:
        m_i, l_i, acc, acc_hi = stream_gathered(q, q_hi, k_ptr, v_ptr, block_table_ptr, pid_b,
                                                pid_kvh.to(gl.int64) * stride_kh, start, end,
                                                first, row_first, row_end, softcap, stride_kp,
                                                stride_kt, stride_btb, page_size, qk_scale, m_i,
                                                l_i, acc, acc_hi, HEAD_DIM, HEAD_DIM_PAD, D_HI,
                                                BLOCK_N, IS_PAGED, PAGE_SIZE, NUM_STAGES, SOFTCAP,
                                                ROW_SPANS, WGMMA)
    else:
        m_i, l_i, acc, acc_hi = stream_tma(q, q_hi, k_desc, v_desc, k_hi_desc, v_hi_desc, pid_b,
                                           pid_kvh, start, end, first, row_first, row_end,
                                           softcap, qk_scale, m_i, l_i, acc, acc_hi, NUM_STAGES,
                                           SOFTCAP, ROW_SPANS, D_HI, WGMMA)
    v_scale = 1.0
    if KV_SCALED:
        v_scale = gl.load(v_scale_ptr + pid_kvh * scale_stride)
    return normalise(m_i, l_i, acc, acc_hi, v_scale)


@gluon.jit
def block_span(start, end, seq_len, window, q_len, group_size, row0, BLOCK_H: gl.constexpr,
               BLOCK_N: gl.constexpr):
    """(start, end, first) of a block of query rows ``row0 + [0, BLOCK_H)`` over tokens
    [start, end) of a sequence of ``seq_len``: the range cut to end at its last row's token and
    to start at the tile of its first row's window (``first``: that window's first token)."""
    last_row = gl.minimum(row0 + BLOCK_H, q_len * group_size) - 1
    first = gl.maximum(seq_len - q_len + 1 + row0 // group_size - window, 0)
    end = gl.minimum(end, seq_len - q_len + 1 + last_row // group_size)
    start = gl.maximum(start, first - first % BLOCK_N)  # no tile wholly before the window
    return start, end, first


@gluon.jit
def normalise(m_i, l_i, acc, acc_hi, v_scale):
    """(out, out_hi, lse) of an online softmax's state: the accumulators over the row sums times
    ``v_scale`` (an fp8 cache's V scale, else 1), lse in natural log; an empty row (nothing
    seen) gives 0 and -inf."""
    empty = l_i == 0.0
    norm = v_scale / gl.where(empty, 1.0, l_i)
    lse = gl.where(empty, float("-inf"), (m_i + gl.log2(gl.where(empty, 1.0, l_i))) * LN2)
    out = acc * gl.convert_layout(norm, gl.SliceLayout(1, acc.type.layout))[:, None]
    out_hi = acc_hi * gl.convert_layout(norm, gl.SliceLayout(1, acc_hi.type.layout))[:, None]
    return out, out_hi, lse


@gluon.jit
def store_rows(out_ptr, lse_ptr, out, out_hi, lse, stride_ot, stride_oh, stride_lt, group_size,
               q_len, row0, BLOCK_H: gl.constexpr, HEAD_DIM: gl.constexpr,
               HEAD_DIM_PAD: gl.constexpr, D_HI: gl.constexpr, WGMMA: gl.constexpr):
    """Store the block's valid rows: row r (query token t = r // group_size, head g of the
    group) of out at ``out_ptr + t * stride_ot + g * stride_oh``, its lse at ``lse_ptr +
    t * stride_lt + g`` (both pointers at the sequence's first token and the group's first
    head); ``out_hi``: the dims from ``HEAD_DIM_PAD`` on where ``D_HI`` > 0 (``attend``)."""
    MMA: gl.constexpr = acc_layout(WGMMA, HEAD_DIM_PAD, gl.num_warps())  # out's
    lse = gl.convert_layout(lse, gl.SliceLayout(1, MMA))
    rows = row0 + gl.arange(0, BLOCK_H, gl.SliceLayout(1, MMA))
    offs_d = gl.arange(0, HEAD_DIM_PAD, gl.SliceLayout(0, MMA))
    mask_h = rows < q_len * group_size
    token, head = rows // group_size, rows % group_size
    row_ptr = out_ptr + (token * stride_ot + head * stride_oh)[:, None]
    gl.store(row_ptr + offs_d[None, :], out.to(out_ptr.dtype.element_ty),
             mask=mask_h[:, None] & (offs_d < HEAD_DIM)[None, :])
    if D_HI > 0:
        offs_hi = HEAD_DIM_PAD + gl.arange(0, D_HI, gl.SliceLayout(0, MMA))
        out_hi = gl.convert_layout(out_hi, MMA)
        gl.store(row_ptr + offs_hi[None, :], out_hi.to(out_ptr.dtype.element_ty),
                 mask=mask_h[:, None] & (offs_hi < HEAD_DIM)[None, :])
    gl.store(lse_ptr + token * stride_lt + head, lse, mask=mask_h)


# ---- launch configuration ----------------------------------------------------------------------
MIN_BLOCK_H = 16  # mma_v2's m16 tile: the query group is padded up to it
# Multi-token queries: every warp holds all the tile's rows (acc_layout), so its accumulator and
# the accumulator and the scores take rows x (the tiles' dims + BLOCK_N) / (32 x num_warps) floats a
# thread: within 48 the kernel compiles without spilling (ptxas for sm_90: 32 rows x (128 + 64)
# on 4 warps, 239-241 registers; at 64, 255 and spills, dense and paged; tests/test_triton_sm90.py
# checks the rule's configs). The tile gets narrower than the slot's (down to 32 tokens) while
# that lets a program take more of a KV head's query rows (each program of a KV head reads its
# K/V: the fewer, the fewer reads), then the rows are split as the budget allows
THREAD_FLOATS = 48
MIN_FITTED_BLOCK_N = 32  # narrower tiles than the slot's, to fit the rows, down to this
MAX_BLOCK_N = 128  # tokens per K/V tile at most
# Bytes of K + V in flight per SM that keep HBM busy: one program alone streams 64 KB slots; where
# several share an SM (a grid of several waves, or the split planner's items), each takes its
# share, so more programs hide each other's softmax (scripts/sweep.py gluon; the results README).
SM_SLOT_BYTES = 64 * 1024
MAX_SHARERS = planner.MAX_SHARERS  # programs per SM the slot is divided among (16 KB at most 4 ways)
NUM_STAGES = 2  # ring slots: one tile in flight while one is consumed (deeper rings measured slower)
NUM_WARPS = 4  # one warpgroup issues a slot's copies; 8 warps measured no faster, but for WIDE_WARPS
# Split-K where one warpgroup holds only a 16-row tile of a KV head's rows (head dims over 128)
# and its K/V exceed L2: each further program of the head re-reads them from HBM, so two
# warpgroups take 32 rows (up to 64 B of spills: paged), the score tile still an mma's 8 columns a
# warp. Not at head dim 128 nor in one-pass: slower there (results/nvidia-h200/2026-11-26-combine)
WIDE_WARPS = 8
MMA_N = 8
# WGMMA=1 (the ``wgmma`` knob, or ``wgmma_rule``): both products on
# Hopper's warpgroup MMA, 16 rows a warp (64 a warpgroup), so a draft's up to 64 rows of a KV head
# take one program where mma_v2's register budget splits them into programs that each re-read
# the K/V. Over 64 rows a head takes two programs, not one of 128 rows on 8 warps (half the
# programs): that measured slower on 12 of 17 such drafts, faster on 4
# (results/nvidia-h100/2026-11-27-gluon-wgmma128). A thread holds (dims + BLOCK_N) / 2
# accumulator floats: the tile narrows to keep that within WGMMA_THREAD_FLOATS.
WGMMA_THREAD_FLOATS = 160
# The rule takes WGMMA where a KV head has more rows than one mma_v2 tile (16) and the K/V read
# is not launch-bound: under a few MB (problems of 8-15 us on an H100) two 64-row programs cost
# more than four 16-32-row ones re-reading K/V from L2 (results/nvidia-h100/2026-11-26-gluon-wgmma)
WGMMA_MIN_KV_BYTES = 4 << 20
REPORTED = ("BLOCK_N", "BLOCK_H", "D_HI", "PAGE_SIZE", "NUM_STAGES", "DENSE_TMA", "WGMMA",
            "num_warps")  # Launch.config


def reported(cfg: dict) -> dict:
    """What Launch.config records: REPORTED and the head dim's split (``tiles_reported``)."""
    return tiles_reported(cfg, REPORTED)


def pick_launch_config(problem, config: dict | None = None, sharers: int = MAX_SHARERS,
                       tma: bool = False, l2_bytes: int = L2_BYTES, split: bool = False) -> dict:
    """Compile-time shape of the kernels for ``problem`` (no device query) on a GPU of
    ``l2_bytes`` of L2, dense tiles by TMA or not (``tma``: the launcher's choice, measured per
    variant), with ``sharers`` programs per SM (the one-pass grid's waves; the split planner
    fills SMs with the most), for the split kernel or not (``split``); ``config`` overrides the
    tunable ones (``BLOCK_N``, ``NUM_STAGES``, ``DENSE_TMA``, ``DIM_SPLIT``, ``num_warps``).
    ``HEAD_DIM_PAD``: the head dim's first tile, ``D_HI`` its second (0: none), by
    ``impls.common.head_dim_tiles``."""
    if "WARP_SPEC" in (config or {}):  # the launchers decide it first (impls.gluon._ws)
        raise ProblemError("config: WARP_SPEC: taken by the launcher, not by the tile kernels' "
                           "rule (impls.gluon._ws.ws_config)")
    dim_split = (config or {}).get("DIM_SPLIT", dim_split_rule(problem))
    head_dim_pad, d_hi = head_dim_tiles(problem.head_dim, dim_split)
    dims = head_dim_pad + d_hi  # what a tile's registers and shared memory hold
    sharers = min(max(1, sharers), MAX_SHARERS)
    slot = SM_SLOT_BYTES // sharers
    fit = slot // (2 * dims * problem.kv_itemsize)  # tokens in one slot's K + V
    defaults = dict(
        HEAD_DIM=problem.head_dim,
        HEAD_DIM_PAD=head_dim_pad,
        D_HI=d_hi,
        DIM_SPLIT=dim_split,
        BLOCK_N=max(16, min(MAX_BLOCK_N, 1 << (fit.bit_length() - 1), planner.widest_tile(problem))),
        IS_PAGED=problem.layout == "paged",
        NUM_STAGES=NUM_STAGES,
        DENSE_TMA=int(tma),
        KV_SCALED=problem.cache.quantised,
        SOFTCAP=problem.softcap is not None,
        ROW_SPANS=problem.q_len > 1,
        WGMMA=wgmma_rule(problem, (config or {}).get("num_warps", NUM_WARPS)),
        MIN_BLOCKS=None,  # a register cap: the launcher's rule on the compiled kernel (impls.plan)
        num_warps=NUM_WARPS,
    )
    cfg = with_overrides(defaults, config)
    rows = triton.next_power_of_2(problem.q_len * problem.group_size)
    if cfg["WGMMA"] not in (0, 1):
        raise ProblemError(f"config: WGMMA={cfg['WGMMA']!r}: must be 0 or 1")
    if cfg["WGMMA"]:
        cfg["BLOCK_N"], cfg["BLOCK_H"] = _wgmma_tiles(problem, config, cfg, dims)
    else:
        _mma_v2_tiles(problem, config, cfg, dims, rows, split, l2_bytes)

    def smem(block_n):  # the rings (K and V, both tiles of the head dim) and WGMMA's query rows
        return (cfg["NUM_STAGES"] * block_n * 2 * problem.kv_itemsize
                + (cfg["BLOCK_H"] * problem.itemsize if cfg["WGMMA"] else 0)) * dims
    if "BLOCK_N" not in (config or {}):  # a deeper ring asked for: narrower tiles
        while cfg["BLOCK_N"] > 16 and smem(cfg["BLOCK_N"]) > SMEM_BYTES:
            cfg["BLOCK_N"] //= 2
    if smem(cfg["BLOCK_N"]) > SMEM_BYTES:
        raise ProblemError(f"config: BLOCK_N={cfg['BLOCK_N']}, NUM_STAGES={cfg['NUM_STAGES']}, "
                           f"BLOCK_H={cfg['BLOCK_H']}, WGMMA={cfg['WGMMA']} at {dims} dims: "
                           f"{smem(cfg['BLOCK_N'])} B of shared memory, more than a program has "
                           f"on sm_90 ({SMEM_BYTES} B)")
    tile, stages = cfg["BLOCK_N"], cfg["NUM_STAGES"]
    if tile not in (16, 32, 64, 128, 256) or not 2 <= stages <= 8 or \
            cfg["num_warps"] not in (1, 2, 4, 8) or cfg["DENSE_TMA"] not in (0, 1):
        raise ProblemError(f"config: BLOCK_N={tile}, NUM_STAGES={stages}, DENSE_TMA="
                           f"{cfg['DENSE_TMA']}, num_warps={cfg['num_warps']}: BLOCK_N must be a "
                           "power of two in [16, 256] (the mma k and n steps; a TMA box row is at "
                           "most 256), NUM_STAGES in [2, 8], DENSE_TMA 0 or 1, num_warps 1, 2, 4 "
                           "or 8")
    del cfg["DIM_SPLIT"]  # a tunable, not a kernel parameter: it picks HEAD_DIM_PAD and D_HI
    ps = problem.page_size
    per_page = cfg["IS_PAGED"] and (tile % ps == 0 or ps % tile == 0)
    # paged tiles are always gathered: DENSE_TMA says what runs (reported, specialised on)
    return {**cfg, "PAGE_SIZE": ps if per_page else 0,
            "DENSE_TMA": 0 if cfg["IS_PAGED"] else cfg["DENSE_TMA"]}


def wgmma_rule(problem, num_warps: int) -> int:
    """``WGMMA`` where no config says: 16-bit operands on whole warpgroups, more query rows a KV
    head than mma_v2's 16-row tile, and K/V of at least ``WGMMA_MIN_KV_BYTES``."""
    return int(problem.itemsize == 2 and problem.kv_itemsize == 2 and num_warps in (4, 8)
               and problem.q_len * problem.group_size > MIN_BLOCK_H
               and problem.kv_bytes >= WGMMA_MIN_KV_BYTES)


def _mma_v2_tiles(problem, config, cfg: dict, dims: int, rows: int, split: bool,
                  l2_bytes: int) -> None:
    """``pick_launch_config``'s warps, tile and rows a program for mma_v2 (into ``cfg``), where
    every warp holds all the program's rows: as many rows as THREAD_FLOATS allows."""
    def fitted(num_warps):  # (tile, rows a program holds) on num_warps
        budget = THREAD_FLOATS * 32 * num_warps  # floats of a program's rows x (dims + tile)

        def held(block_n):  # the query rows one program takes with this tile
            fit = budget // (dims + block_n)
            return min(max(MIN_BLOCK_H, rows), 1 << (fit.bit_length() - 1))
        block_n = cfg["BLOCK_N"]
        if "BLOCK_N" not in (config or {}):  # narrower while that lets a program take more rows
            while block_n > MIN_FITTED_BLOCK_N and held(block_n // 2) > held(block_n):
                block_n //= 2
        return block_n, held(block_n)
    if split and "num_warps" not in (config or {}) and problem.itemsize == 2 and \
            problem.kv_bytes > l2_bytes:
        narrow, wide = fitted(NUM_WARPS), fitted(WIDE_WARPS)
        if narrow[1] == MIN_BLOCK_H < rows and wide[1] > narrow[1] and wide[0] >= MMA_N * WIDE_WARPS:
            cfg["num_warps"] = WIDE_WARPS
    cfg["BLOCK_N"] = fitted(cfg["num_warps"])[0]
    budget = THREAD_FLOATS * 32 * cfg["num_warps"]
    fit_rows = budget // (dims + cfg["BLOCK_N"])
    cfg["BLOCK_H"] = max(MIN_BLOCK_H, min(rows, max(1 << (fit_rows.bit_length() - 1),
                                                    triton.next_power_of_2(problem.group_size))))


def _wgmma_tiles(problem, config, cfg: dict, dims: int) -> tuple[int, int]:
    """``pick_launch_config``'s (tile, rows a program) for ``WGMMA=1``: a warpgroup's 64 rows
    (128 on 8 warps); 16-bit queries and caches only (its shared operands are read as stored)."""
    if problem.itemsize != 2 or problem.kv_itemsize != 2 or cfg["num_warps"] not in (4, 8):
        raise ProblemError(f"config: WGMMA=1 with num_warps={cfg['num_warps']}: needs 16-bit "
                           f"queries and K/V (here {problem.dtype}, {problem.kv_dtype}; the "
                           "warpgroup MMA reads its shared operands as stored) and num_warps 4 "
                           "or 8 (whole warpgroups)")
    block_n = cfg["BLOCK_N"]
    if "BLOCK_N" not in (config or {}):
        while block_n > 16 and (dims + block_n) / 2 > WGMMA_THREAD_FLOATS:
            block_n //= 2
    return block_n, 16 * cfg["num_warps"]


def kv_descriptors(inputs, cfg: dict):
    """The TMA descriptors of a dense K and V cache (``[batch, max_seq_len, Hkv, D]``, its own
    strides; a box is one tile of one KV head), then those of the head dim's second tile (box
    ``D_HI`` wide), each None where tiles are gathered or the head dim is one tile."""
    def pair(dims):
        block = [1, cfg["BLOCK_N"], 1, dims]
        layout = gl.NVMMASharedLayout.get_default_for(block, TORCH_TO_GL[inputs.k.dtype])
        return tuple(TensorDescriptor(t, list(t.shape), list(t.stride()), block, layout)
                     for t in (inputs.k, inputs.v))
    if not cfg["DENSE_TMA"]:
        return None, None, None, None
    return (*pair(cfg["HEAD_DIM_PAD"]), *(pair(cfg["D_HI"]) if cfg["D_HI"] else (None, None)))


def resident_programs(kernel, cfg: dict, device) -> int:
    """Programs of a compiled attention kernel one SM holds (``impls.plan.residency`` of its
    registers and shared memory); the split planner sizes its work items by it."""
    kernel._init_handles()  # loads the binary: n_regs is known from then on
    return planner.residency(kernel.n_regs, kernel.metadata.shared, cfg["num_warps"],
                             planner.sm_limits(device))
