"""Gluon's warp-specialized kernels for wide drafts (one-pass and split-K): FA3's design (a
producer and two consumer warpgroups) in Gluon, where the tile kernels run one dependent chain a
program.

A program takes ``WS_ROWS`` (128) query rows of one (sequence, KV head) on 12 warps in three
partitions (``gl.warp_specialize``):

- **The loader** (4 warps, ``LOADER_REGS`` registers a thread) gathers each K/V tile by cp.async
  (through the block table when paged, a tile's entries looked up before it waits for a slot)
  into a ring of ``NUM_STAGES`` slots (``WS_STAGES`` by default). It fills a slot once both
  consumers have released it (``empty``, count 2) and marks a tile ``ready`` once its copy group
  has landed: ``wait_group(1)`` (two tiles in flight), a proxy fence in every loader thread
  (cp.async writes through the generic proxy, the warpgroup MMA reads through the async one),
  the loader's warps meet, then one arrive. With ``DENSE_TMA`` a dense cache's tiles come by TMA
  instead (``load_tma``), counted in bytes on ``ready``.
- **Two consumers** (the default partition and a worker, 4 warps each) take 64 of the rows each
  on the warpgroup MMA (``_common.softmax_step``), and each normalises and stores its own rows.
  They are separate partitions, so neither waits for the other: one's softmax runs while the
  other's MMAs do, and the loader's copies run beside both.

16-bit queries and caches only (the warpgroup MMA reads its shared operands as stored); windows,
soft caps and multi-token queries as the one-pass kernel takes them (``_common``).
"""

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier

from impls import plan as planner
from impls.common import SMEM_BYTES, dim_split_rule, head_dim_tiles, program_tokens, tiles_reported
from impls.gluon._common import (acc_layout, block_span, issue_tiles, issue_tma, normalise,
                                 ring_layout, softmax_step, store_rows, tile_layout, tile_rows,
                                 zero_outside)
from specs.problem import ProblemError

WS_ROWS = 128  # two consumer warpgroups of 64 rows (the warpgroup MMA's m)
CONSUMER_ROWS = gl.constexpr(WS_ROWS // 2)
# A consumer's tile: 32 tokens (no spill at any head dim, ptxas for sm_90a); 64 halves the steps a
# token where the accumulators leave room for its scores: dense tiles of head-dim tiles summing to
# WIDE_TILE_DIMS or fewer (no spill at 144-192; at 256 and in the paged gather of 64 rows, spills)
WS_BLOCK_N = 32
WS_TILES = (32, 64)
WIDE_TILE_DIMS = 192
# Whether the rule takes 64-token tiles where they fit (wide_tile_fits); off, a config asks for them.
# On since its registered A/B (2026-11-28-wide-drafts, README, session 72)
WS_TILE_RULE = True
WS_STAGES = 3  # two tiles in flight while one is consumed
WS_STAGE_RANGE = (2, 3, 4)
PARTITION_WARPS = gl.constexpr(4)  # each partition a warpgroup (setmaxnreg works on whole warpgroups)
# Registers a thread per partition (setmaxnreg): the consumers' accumulators (64 rows x up to 256
# dims, 128 floats a thread) and scores; the loader's addresses. The launch's cap is their mean
# over the three warpgroups: the default consumer gets what the workers leave, so it is derived
CONSUMER_REGS = gl.constexpr(224)
LOADER_REGS = gl.constexpr(56)
KERNEL_MAXNREG = (2 * CONSUMER_REGS.value + LOADER_REGS.value) // 3
# What this kernel sets itself, as Launch.config reports it (a reported config replays as is)
# (num_warps: the launch's, the default partition's; the two workers add as many each)
OWN = {"MIN_BLOCKS": 0, "num_warps": PARTITION_WARPS.value, "WGMMA": 1}
# What it takes from a config as the tile kernels do: the tile (WS_TILES), the ring's slots
# (WS_STAGE_RANGE, within a program's shared memory), the head dim's split; dense tiles by TMA (1)
# or cp.async (0; the default where the variant's rule does not take dense caches, LAYOUTS); paged
# tiles are always gathered. Named in a config without WARP_SPEC, each is the tile kernels' choice
# and keeps the rule off
TAKEN = ("BLOCK_N", "NUM_STAGES", "DENSE_TMA", "DIM_SPLIT")
# The cache layouts each variant's rule takes (2026-11-28-wide-drafts, README): both, each where
# its registered A/B on unseen dense drafts held (one pass on batches it runs balanced, split-K on
# head-dim tiles that pay, tiles_pay); dense tiles then by TMA
LAYOUTS = {"one-pass": ("paged", "dense"), "split-k": ("paged", "dense")}
# The narrowest second head-dim tile split-K's rule takes: one of 16 or 32 dims (head dims 129-160)
# adds a full step to each consumer's chain of products for a sliver of the bytes, and lost
MIN_SPLIT_DIM_TILE = 64
# Which variants the rule decides (results/nvidia-h200/2026-11-28-wide-drafts: each rule went on
# only where its A/B on unseen drafts held its registered prediction); off, a config reaches it
BY_RULE = {"one-pass": True, "split-k": True}


@gluon.jit
def ws_loader(k_ring, v_ring, k_hi_ring, v_hi_ring, ready, empty, landed, k_ptr, v_ptr,
              block_table_ptr, k_desc, v_desc, k_hi_desc, v_hi_desc, pid_b, pid_kvh, kvh_off,
              start, end, first, stride_kp, stride_kt, stride_btb, page_size,
              HEAD_DIM: gl.constexpr, HEAD_DIM_PAD: gl.constexpr, D_HI: gl.constexpr,
              BLOCK_N: gl.constexpr, IS_PAGED: gl.constexpr, PAGE_SIZE: gl.constexpr,
              NUM_STAGES: gl.constexpr, DENSE_TMA: gl.constexpr):
    """Tokens [start, end) into the ring, tile i in slot i % NUM_STAGES, marked on ``ready``:
    gathered by cp.async (rows before ``first``, a window's start, and past ``end`` zero-filled,
    not read), or ``DENSE_TMA`` by TMA (``load_tma``)."""
    if DENSE_TMA:
        load_tma(k_ring, v_ring, k_hi_ring, v_hi_ring, ready, empty, landed, k_desc, v_desc,
                 k_hi_desc, v_hi_desc, pid_b, pid_kvh, start, end, first, HEAD_DIM_PAD, D_HI,
                 BLOCK_N, NUM_STAGES)
    else:
        gather(k_ring, v_ring, k_hi_ring, v_hi_ring, ready, empty, k_ptr, v_ptr, block_table_ptr,
               pid_b, kvh_off, start, end, first, stride_kp, stride_kt, stride_btb, page_size,
               HEAD_DIM, HEAD_DIM_PAD, D_HI, BLOCK_N, IS_PAGED, PAGE_SIZE, NUM_STAGES)


@gluon.jit
def load_tma(k_ring, v_ring, k_hi_ring, v_hi_ring, ready, empty, landed, k_desc, v_desc,
             k_hi_desc, v_hi_desc, pid_b, pid_kvh, start, end, first, HEAD_DIM_PAD: gl.constexpr,
             D_HI: gl.constexpr, BLOCK_N: gl.constexpr, NUM_STAGES: gl.constexpr):
    """A dense cache's tiles by TMA (``_common.issue_tma``'s boxes, dims past the head dim
    zero-filled), a tile's K and V counted in bytes on its slot's ``ready``. A tile reaching
    past ``end`` or starting before ``first`` brings whole rows, poison included: it lands on
    ``landed`` instead, this warpgroup zeroes its V rows outside [first, end) (the consumers
    mask the scores), fences its stores for the MMA's proxy, and marks it ready by one arrive."""
    # the boxes' bytes are what the barriers count: a box of another shape would never complete
    gl.static_assert((k_desc.block_shape[1] == BLOCK_N) & (k_desc.block_shape[3] == HEAD_DIM_PAD),
                     "the descriptors' box: [1, BLOCK_N, 1, HEAD_DIM_PAD]")
    if D_HI > 0:
        gl.static_assert(k_hi_desc.block_shape[3] == D_HI, "the second tile's box: D_HI wide")
    TILE_BYTES: gl.constexpr = BLOCK_N * (HEAD_DIM_PAD + D_HI) * k_desc.dtype.primitive_bitwidth // 8
    num_tiles = gl.cdiv(end - start, BLOCK_N)
    edges = 0  # edge tiles landed so far: ``landed``'s phase
    for i in range(num_tiles):
        slot = i % NUM_STAGES
        # the loader's warps at one tile: a warp a ring's turn behind would read a later phase of
        # ``empty`` as this one (one thread issues, the others only wait)
        gl.thread_barrier()
        mbarrier.wait(empty.index(slot), ((i // NUM_STAGES) & 1) ^ 1)
        tile_start = start + i * BLOCK_N
        if (tile_start + BLOCK_N > end) | (tile_start < first):
            issue_tma(k_desc, v_desc, k_hi_desc, v_hi_desc, k_ring, v_ring, k_hi_ring, v_hi_ring,
                      landed.index(0), slot, pid_b, tile_start, pid_kvh, 2 * TILE_BYTES, True,
                      HEAD_DIM_PAD, D_HI)
            mbarrier.wait(landed.index(0), edges & 1)
            edges += 1
            zero_outside(v_ring.index(slot).reshape([BLOCK_N, HEAD_DIM_PAD]), tile_start, first,
                         end)
            if D_HI > 0:
                zero_outside(v_hi_ring.index(slot).reshape([BLOCK_N, D_HI]), tile_start, first, end)
            fence_async_shared()  # the zeros (generic proxy) before the MMA reads them (async)
            gl.thread_barrier()  # every loader thread's zeros, and its wait on ``landed``, done
            mbarrier.arrive(ready.index(slot))
        else:
            issue_tma(k_desc, v_desc, k_hi_desc, v_hi_desc, k_ring, v_ring, k_hi_ring, v_hi_ring,
                      ready.index(slot), slot, pid_b, tile_start, pid_kvh, 2 * TILE_BYTES, True,
                      HEAD_DIM_PAD, D_HI)


@gluon.jit
def gather(k_ring, v_ring, k_hi_ring, v_hi_ring, ready, empty, k_ptr, v_ptr, block_table_ptr,
           pid_b, kvh_off, start, end, first, stride_kp, stride_kt, stride_btb, page_size,
           HEAD_DIM: gl.constexpr, HEAD_DIM_PAD: gl.constexpr, D_HI: gl.constexpr,
           BLOCK_N: gl.constexpr, IS_PAGED: gl.constexpr, PAGE_SIZE: gl.constexpr,
           NUM_STAGES: gl.constexpr):
    """The tiles by cp.async: a copy group a tile, two in flight, each marked ready once landed
    and fenced in every loader thread."""
    LOAD: gl.constexpr = tile_layout(HEAD_DIM_PAD, k_ptr.dtype.element_ty.primitive_bitwidth,
                                     gl.num_warps())
    offs_n = gl.arange(0, BLOCK_N, gl.SliceLayout(1, LOAD))
    num_tiles = gl.cdiv(end - start, BLOCK_N)
    page, row, mask_n = tile_rows(pid_b, start, offs_n, first, end, block_table_ptr, stride_btb,
                                  page_size, IS_PAGED, PAGE_SIZE)
    for i in range(num_tiles):
        slot = i % NUM_STAGES
        # both consumers done with the slot's last tile (a fresh barrier's phase 1 counts as done)
        mbarrier.wait(empty.index(slot), ((i // NUM_STAGES) & 1) ^ 1)
        issue_tiles(k_ring, v_ring, k_hi_ring, v_hi_ring, slot, k_ptr, v_ptr, page, row, mask_n,
                    kvh_off, stride_kp, stride_kt, HEAD_DIM, HEAD_DIM_PAD, D_HI)
        async_copy.commit_group()
        # the next tile's table entries in flight while this one's copies are
        page, row, mask_n = tile_rows(pid_b, start + (i + 1) * BLOCK_N, offs_n, first, end,
                                      block_table_ptr, stride_btb, page_size, IS_PAGED, PAGE_SIZE)
        if i > 0:  # the tile before landed (this thread's copies): fenced, then marked once
            async_copy.wait_group(1)
            fence_async_shared()
            gl.thread_barrier()
            mbarrier.arrive(ready.index((i - 1) % NUM_STAGES))
    async_copy.wait_group(0)
    fence_async_shared()
    gl.thread_barrier()
    mbarrier.arrive(ready.index((num_tiles - 1) % NUM_STAGES), pred=num_tiles > 0)


@gluon.jit
def ws_consumer(q_smem, q_hi_smem, k_ring, v_ring, k_hi_ring, v_hi_ring, ready, empty, q_ptr,
                out_ptr, lse_ptr, part_out_ptr, part_lse_ptr, slot, pid_b, pid_kvh, start, end,
                first, seq_len, group_size, q_len, window, qk_scale, softcap, row0, stride_qb,
                stride_qh, stride_ot, stride_oh, stride_lt, part_stride_ot, part_stride_oh,
                part_stride_lt, CONSUMER: gl.constexpr, HEAD_DIM: gl.constexpr,
                HEAD_DIM_PAD: gl.constexpr, D_HI: gl.constexpr, BLOCK_N: gl.constexpr,
                NUM_STAGES: gl.constexpr, SOFTCAP: gl.constexpr, ROW_SPANS: gl.constexpr,
                SPLIT: gl.constexpr, DENSE_TMA: gl.constexpr):
    """Consumer ``CONSUMER``'s 64 rows (``row0 + CONSUMER * 64`` on) over every tile the loader
    marks ready: the query into its shared buffer, the online softmax on the warpgroup MMA, each
    slot released once both its products have read it, then its rows normalised and stored
    (``store_rows``' pointers and strides: the final ``out``/``lse`` at the sequence's first
    token and the group's first head; ``SPLIT``: a piece of a split sequence, ``slot`` >= 0,
    stores its partial through the ``part_`` ones instead)."""
    BLOCK_H: gl.constexpr = CONSUMER_ROWS
    dtype: gl.constexpr = q_ptr.dtype.element_ty
    LOAD: gl.constexpr = tile_layout(HEAD_DIM_PAD, dtype.primitive_bitwidth, gl.num_warps())
    MMA: gl.constexpr = acc_layout(1, BLOCK_N, gl.num_warps())  # the scores'
    OUT: gl.constexpr = acc_layout(1, HEAD_DIM_PAD, gl.num_warps())
    rows0 = row0 + CONSUMER * BLOCK_H
    rows = rows0 + gl.arange(0, BLOCK_H, gl.SliceLayout(1, LOAD))
    mask_h = rows < q_len * group_size
    row_off = (pid_b * q_len + rows // group_size) * stride_qb + \
        (pid_kvh * group_size + rows % group_size) * stride_qh
    offs_d = gl.arange(0, HEAD_DIM_PAD, gl.SliceLayout(0, LOAD))
    q = q_smem.index(CONSUMER)
    q.store(gl.load(q_ptr + row_off[:, None] + offs_d[None, :],
                    mask=mask_h[:, None] & (offs_d < HEAD_DIM)[None, :], other=0.0))
    q_hi = None
    acc_hi = gl.zeros([BLOCK_H, 16], gl.float32, MMA)  # a placeholder, unless D_HI > 0
    if D_HI > 0:
        LOAD_HI: gl.constexpr = tile_layout(D_HI, dtype.primitive_bitwidth, gl.num_warps())
        rows_hi = gl.convert_layout(row_off, gl.SliceLayout(1, LOAD_HI))
        mask_hi = gl.convert_layout(mask_h, gl.SliceLayout(1, LOAD_HI))
        offs_hi = HEAD_DIM_PAD + gl.arange(0, D_HI, gl.SliceLayout(0, LOAD_HI))
        q_hi = q_hi_smem.index(CONSUMER)
        q_hi.store(gl.load(q_ptr + rows_hi[:, None] + offs_hi[None, :],
                           mask=mask_hi[:, None] & (offs_hi < HEAD_DIM)[None, :], other=0.0))
        acc_hi = gl.zeros([BLOCK_H, D_HI], gl.float32, acc_layout(1, D_HI, gl.num_warps()))
    fence_async_shared()  # the query's stores (generic proxy) before the MMA reads them (async)
    gl.thread_barrier()  # every warp's rows stored before the warpgroup reads them all
    m_i = gl.full([BLOCK_H], float("-inf"), gl.float32, gl.SliceLayout(1, MMA))
    l_i = gl.zeros([BLOCK_H], gl.float32, gl.SliceLayout(1, MMA))
    acc = gl.zeros([BLOCK_H, HEAD_DIM_PAD], gl.float32, OUT)
    row_end = seq_len - q_len + 1 + (rows0 + gl.arange(0, BLOCK_H, gl.SliceLayout(1, MMA))) // group_size
    row_first = gl.maximum(row_end - window, 0)
    for i in range(gl.cdiv(end - start, BLOCK_N)):
        stage = i % NUM_STAGES
        mbarrier.wait(ready.index(stage), (i // NUM_STAGES) & 1)
        k_tile, v_tile, k_hi, v_hi = slot_tiles(k_ring, v_ring, k_hi_ring, v_hi_ring, stage,
                                                HEAD_DIM_PAD, D_HI, BLOCK_N, DENSE_TMA)
        m_i, l_i, acc, acc_hi = softmax_step(q, q_hi, k_tile, k_hi, v_tile, v_hi,
                                             start + i * BLOCK_N, first, end, row_first,
                                             row_end, softcap, qk_scale, m_i, l_i, acc,
                                             acc_hi, SOFTCAP, ROW_SPANS, D_HI, 1)
        mbarrier.arrive(empty.index(stage))  # both products done reading it (synchronous MMA)
    out, out_hi, lse = normalise(m_i, l_i, acc, acc_hi, 1.0)
    is_part = False
    if SPLIT:
        is_part = slot >= 0
    if is_part:
        store_rows(part_out_ptr, part_lse_ptr, out, out_hi, lse, part_stride_ot, part_stride_oh,
                   part_stride_lt, group_size, q_len, rows0, BLOCK_H, HEAD_DIM, HEAD_DIM_PAD,
                   D_HI, 1)
    else:
        store_rows(out_ptr, lse_ptr, out, out_hi, lse, stride_ot, stride_oh, stride_lt,
                   group_size, q_len, rows0, BLOCK_H, HEAD_DIM, HEAD_DIM_PAD, D_HI, 1)


@gluon.jit
def slot_tiles(k_ring, v_ring, k_hi_ring, v_hi_ring, stage, HEAD_DIM_PAD: gl.constexpr,
               D_HI: gl.constexpr, BLOCK_N: gl.constexpr, DENSE_TMA: gl.constexpr):
    """A ring slot's K and V tiles and their second head-dim tiles (without one, the first's
    stand in, never read) as the warpgroup MMA's ``[BLOCK_N, dims]`` operands."""
    k_tile = k_ring.index(stage)
    v_tile = v_ring.index(stage)
    if DENSE_TMA:  # the TMA boxes' [1, BLOCK_N, 1, dims] slots
        k_tile = k_tile.reshape([BLOCK_N, HEAD_DIM_PAD])
        v_tile = v_tile.reshape([BLOCK_N, HEAD_DIM_PAD])
    k_hi = k_tile
    v_hi = v_tile
    if D_HI > 0:
        k_hi = k_hi_ring.index(stage)
        v_hi = v_hi_ring.index(stage)
        if DENSE_TMA:
            k_hi = k_hi.reshape([BLOCK_N, D_HI])
            v_hi = v_hi.reshape([BLOCK_N, D_HI])
    return k_tile, v_tile, k_hi, v_hi


@gluon.jit
def ws_program(q_ptr, k_ptr, v_ptr, block_table_ptr, k_desc, v_desc, k_hi_desc, v_hi_desc, out_ptr,
               lse_ptr, part_out_ptr, part_lse_ptr, slot, pid_b, pid_kvh, row0, start, end, seq_len,
               stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, stride_ot,
               stride_oh, stride_lt, part_stride_ot, part_stride_oh, part_stride_lt, page_size,
               group_size, qk_scale, window, softcap, q_len, HEAD_DIM: gl.constexpr,
               HEAD_DIM_PAD: gl.constexpr, D_HI: gl.constexpr, BLOCK_N: gl.constexpr,
               IS_PAGED: gl.constexpr, PAGE_SIZE: gl.constexpr, NUM_STAGES: gl.constexpr,
               SOFTCAP: gl.constexpr, ROW_SPANS: gl.constexpr, SPLIT: gl.constexpr,
               DENSE_TMA: gl.constexpr):
    """One program: KV head ``pid_kvh``'s query rows ``row0 + [0, 128)`` of sequence ``pid_b``
    over its tokens [start, end) (cut to the rows' windows and spans), the ring and its barriers
    allocated, then the three partitions (output pointers as ``ws_consumer`` takes them)."""
    start, end, first = block_span(start, end, seq_len, window, q_len, group_size, row0,
                                   2 * CONSUMER_ROWS, BLOCK_N)
    dtype: gl.constexpr = k_ptr.dtype.element_ty
    if DENSE_TMA:  # slots shaped as the descriptors' boxes, in their layout
        k_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES] + k_desc.block_shape, k_desc.layout)
        v_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES] + v_desc.block_shape, v_desc.layout)
    else:
        SMEM: gl.constexpr = ring_layout(1, BLOCK_N, HEAD_DIM_PAD, dtype)
        k_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES, BLOCK_N, HEAD_DIM_PAD], SMEM)
        v_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES, BLOCK_N, HEAD_DIM_PAD], SMEM)
    q_smem = gl.allocate_shared_memory(dtype, [2, CONSUMER_ROWS, HEAD_DIM_PAD],
                                       ring_layout(1, CONSUMER_ROWS, HEAD_DIM_PAD, dtype))
    # the head dim's second tile's buffers; without one (D_HI 0, never read) the first's stand in:
    # a partition's arguments cannot be None
    k_hi_ring = k_ring
    v_hi_ring = v_ring
    q_hi_smem = q_smem
    if D_HI > 0:
        if DENSE_TMA:
            k_hi_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES] + k_hi_desc.block_shape,
                                                  k_hi_desc.layout)
            v_hi_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES] + v_hi_desc.block_shape,
                                                  v_hi_desc.layout)
        else:
            SMEM_HI: gl.constexpr = ring_layout(1, BLOCK_N, D_HI, dtype)
            k_hi_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES, BLOCK_N, D_HI], SMEM_HI)
            v_hi_ring = gl.allocate_shared_memory(dtype, [NUM_STAGES, BLOCK_N, D_HI], SMEM_HI)
        q_hi_smem = gl.allocate_shared_memory(dtype, [2, CONSUMER_ROWS, D_HI],
                                              ring_layout(1, CONSUMER_ROWS, D_HI, dtype))
    ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(NUM_STAGES):
        mbarrier.init(ready.index(s), count=1)  # the loader's one arrive a tile
        mbarrier.init(empty.index(s), count=2)  # one a consumer
    landed = ready  # (a stand-in, never waited on, where tiles are gathered)
    if DENSE_TMA:
        landed = gl.allocate_shared_memory(gl.int64, [1, 1], mbarrier.MBarrierLayout())
        mbarrier.init(landed.index(0), count=1)  # an edge tile's bytes, before its V rows are zeroed
        fence_async_shared()  # the initialised barriers visible to the TMA unit before its first copy
    else:  # the descriptors are None: stand-ins, never read
        k_desc = k_ptr
        v_desc = v_ptr
    if D_HI == 0 or not DENSE_TMA:
        k_hi_desc = k_desc
        v_hi_desc = v_desc
    # (the same arguments twice but for the consumer's index: Gluon takes no starred tuples here)
    gl.warp_specialize([
        (ws_consumer, (q_smem, q_hi_smem, k_ring, v_ring, k_hi_ring, v_hi_ring, ready, empty,
                       q_ptr, out_ptr, lse_ptr, part_out_ptr, part_lse_ptr, slot, pid_b, pid_kvh,
                       start, end, first, seq_len, group_size, q_len, window, qk_scale, softcap,
                       row0, stride_qb, stride_qh, stride_ot, stride_oh, stride_lt,
                       part_stride_ot, part_stride_oh, part_stride_lt, 0, HEAD_DIM,
                       HEAD_DIM_PAD, D_HI, BLOCK_N, NUM_STAGES, SOFTCAP, ROW_SPANS, SPLIT,
                       DENSE_TMA)),
        (ws_consumer, (q_smem, q_hi_smem, k_ring, v_ring, k_hi_ring, v_hi_ring, ready, empty,
                       q_ptr, out_ptr, lse_ptr, part_out_ptr, part_lse_ptr, slot, pid_b, pid_kvh,
                       start, end, first, seq_len, group_size, q_len, window, qk_scale, softcap,
                       row0, stride_qb, stride_qh, stride_ot, stride_oh, stride_lt,
                       part_stride_ot, part_stride_oh, part_stride_lt, 1, HEAD_DIM,
                       HEAD_DIM_PAD, D_HI, BLOCK_N, NUM_STAGES, SOFTCAP, ROW_SPANS, SPLIT,
                       DENSE_TMA)),
        (ws_loader, (k_ring, v_ring, k_hi_ring, v_hi_ring, ready, empty, landed, k_ptr, v_ptr,
                     block_table_ptr, k_desc, v_desc, k_hi_desc, v_hi_desc, pid_b, pid_kvh,
                     pid_kvh.to(gl.int64) * stride_kh, start, end, first, stride_kp, stride_kt,
                     stride_btb, page_size, HEAD_DIM, HEAD_DIM_PAD, D_HI, BLOCK_N, IS_PAGED,
                     PAGE_SIZE, NUM_STAGES, DENSE_TMA)),
    ], [PARTITION_WARPS, PARTITION_WARPS], [CONSUMER_REGS, LOADER_REGS])


# runtime ints that vary per problem are not specialised (fewer recompiles, same code)
@gluon.jit(do_not_specialize=["page_size", "group_size", "q_len", "row_blocks"])
def ws_kernel(
    q_ptr, k_ptr, v_ptr, seq_lens_ptr, block_table_ptr, out_ptr, lse_ptr,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, stride_ob, stride_oh,
    stride_lb, page_size, group_size, qk_scale, k_desc, v_desc, k_hi_desc, v_hi_desc, window,
    softcap, q_len, row_blocks,
    HEAD_DIM: gl.constexpr, HEAD_DIM_PAD: gl.constexpr, D_HI: gl.constexpr,
    BLOCK_N: gl.constexpr, IS_PAGED: gl.constexpr, PAGE_SIZE: gl.constexpr,
    NUM_STAGES: gl.constexpr, SOFTCAP: gl.constexpr, ROW_SPANS: gl.constexpr,
    DENSE_TMA: gl.constexpr,
):
    """One-pass: a program a (sequence, KV head, 128-row block), the whole sequence."""
    # the one-pass tile kernel's order: a sequence's KV heads side by side, a head's row blocks
    # beside each other
    pid_kvh = gl.program_id(0) // row_blocks
    row0 = gl.program_id(0) % row_blocks * (2 * CONSUMER_ROWS)
    pid_b = gl.program_id(1)
    seq_len = gl.load(seq_lens_ptr + pid_b)
    out_ptr += pid_b * q_len * stride_ob + pid_kvh * group_size * stride_oh
    lse_ptr += pid_b * q_len * stride_lb + pid_kvh * group_size
    # (the partial's pointers stand in: no partials, never stored through)
    ws_program(q_ptr, k_ptr, v_ptr, block_table_ptr, k_desc, v_desc, k_hi_desc, v_hi_desc,
               out_ptr, lse_ptr, out_ptr, lse_ptr, -1,
               pid_b, pid_kvh, row0, 0, seq_len, seq_len, stride_qb, stride_qh, stride_kp,
               stride_kt, stride_kh, stride_btb, stride_ob, stride_oh, stride_lb, stride_ob,
               stride_oh, stride_lb, page_size, group_size, qk_scale, window, softcap, q_len,
               HEAD_DIM, HEAD_DIM_PAD, D_HI, BLOCK_N, IS_PAGED, PAGE_SIZE, NUM_STAGES, SOFTCAP,
               ROW_SPANS, False, DENSE_TMA)


@gluon.jit(do_not_specialize=["page_size", "group_size", "num_kv_heads", "q_len", "row_blocks"])
def ws_split_kernel(
    q_ptr, k_ptr, v_ptr, items_ptr, block_table_ptr, out_ptr, lse_ptr, part_out_ptr, part_lse_ptr,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, stride_ob, stride_oh,
    stride_lb, stride_pos, stride_poh, stride_pls, page_size, group_size, qk_scale, k_desc, v_desc,
    k_hi_desc, v_hi_desc, window, softcap, q_len, row_blocks, seq_lens_ptr, num_kv_heads,
    HEAD_DIM: gl.constexpr, HEAD_DIM_PAD: gl.constexpr, D_HI: gl.constexpr,
    BLOCK_N: gl.constexpr, IS_PAGED: gl.constexpr, PAGE_SIZE: gl.constexpr,
    NUM_STAGES: gl.constexpr, SOFTCAP: gl.constexpr, ROW_SPANS: gl.constexpr,
    DENSE_TMA: gl.constexpr,
):
    """Split-K's stage 1 over the plan's work items, as ``split_k.split_kernel`` reads them: a
    program a (KV head, 128-row block) of an item; a whole sequence stores the final result, a
    piece of a split one its partial in its workspace slot (``split_k.combine_kernel`` merges)."""
    # KV heads (and their row blocks) vary fastest: an item's programs start together
    pid_kvh = gl.program_id(0) // row_blocks
    row0 = gl.program_id(0) % row_blocks * (2 * CONSUMER_ROWS)
    item = items_ptr + gl.program_id(1) * 4  # (sequence, start, end, partial slot or -1)
    pid_b = gl.load(item)
    slot = gl.load(item + 3)
    head0 = pid_kvh * group_size
    # a partial's row t x Hq + h: query token t, head h
    num_q_heads = num_kv_heads * group_size
    ws_program(q_ptr, k_ptr, v_ptr, block_table_ptr, k_desc, v_desc, k_hi_desc, v_hi_desc,
               out_ptr + pid_b * q_len * stride_ob + head0 * stride_oh,
               lse_ptr + pid_b * q_len * stride_lb + head0,
               part_out_ptr + slot * stride_pos + head0 * stride_poh,
               part_lse_ptr + slot * stride_pls + head0, slot, pid_b, pid_kvh, row0,
               gl.load(item + 1), gl.load(item + 2), gl.load(seq_lens_ptr + pid_b), stride_qb,
               stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, stride_ob, stride_oh,
               stride_lb, num_q_heads * stride_poh, stride_poh, num_q_heads, page_size,
               group_size, qk_scale, window, softcap, q_len, HEAD_DIM, HEAD_DIM_PAD, D_HI,
               BLOCK_N, IS_PAGED, PAGE_SIZE, NUM_STAGES, SOFTCAP, ROW_SPANS, True, DENSE_TMA)


# ---- launch configuration ----------------------------------------------------------------------
def pays_split(problem, l2_bytes: int, sms: int) -> bool:
    """Where the design pays in split-K, by what it is made of: more query rows a KV head than
    one warpgroup's 64 (a second consumer with work), head dims past 128 (the 64-row programs
    are then one long chain of big products), 16-bit data (the warpgroup MMA's shared operands)
    and K/V beyond the L2 (a bandwidth-bound read)."""
    return (problem.q_len * problem.group_size > WS_ROWS // 2 and problem.head_dim > 128
            and problem.itemsize == 2 and problem.kv_itemsize == 2
            and problem.kv_bytes > l2_bytes)


def pays(problem, l2_bytes: int, sms: int) -> bool:
    """Where it pays in one pass: as in split-K, and sequences x KV heads that fill the SMs (fewer
    would leave SMs idle: split-K's plan fills them with items)."""
    return pays_split(problem, l2_bytes, sms) and problem.batch * problem.num_kv_heads >= sms


def rule_dims(problem) -> tuple[int, int]:
    """The head dim's tiles (``head_dim_tiles``) by the split rule, as the rules judge them."""
    return head_dim_tiles(problem.head_dim, dim_split_rule(problem))


def wide_tile_fits(layout: str, dims: int) -> bool:
    """64-token tiles fit the consumers' registers: a dense cache whose head-dim tiles come to
    ``dims`` <= ``WIDE_TILE_DIMS``."""
    return layout == "dense" and dims <= WIDE_TILE_DIMS


def pays_split_wide_tile(problem, l2_bytes: int, sms: int) -> bool:
    """Split-K's design conditions (``pays_split``) where 64-token tiles fit (``wide_tile_fits``,
    the head dim's tiles by rule)."""
    dims = sum(rule_dims(problem))
    return pays_split(problem, l2_bytes, sms) and wide_tile_fits(problem.layout, dims)


def wide_dim_tiles(problem) -> bool:
    """The head dim in one tile, or in two of which the second is ``MIN_SPLIT_DIM_TILE`` wide."""
    d_hi = rule_dims(problem)[1]
    return d_hi == 0 or d_hi >= MIN_SPLIT_DIM_TILE


def pays_split_wide(problem, l2_bytes: int, sms: int) -> bool:
    """Split-K's design conditions (``pays_split``) with head-dim tiles it takes
    (``wide_dim_tiles``)."""
    return pays_split(problem, l2_bytes, sms) and wide_dim_tiles(problem)


def tiles_pay(problem) -> bool:
    """The tiles pay for a step's fixed costs: wide head-dim tiles (``wide_dim_tiles``) and, on
    dense caches, the tile rule's 64-token tiles (``rule_tile``): a
    narrow second head-dim tile lost on dense caches with either tile, 32-token ones lost or tied
    there."""
    if problem.layout == "dense":
        return wide_dim_tiles(problem) and rule_tile("dense", sum(rule_dims(problem))) == 64
    return wide_dim_tiles(problem)


def pays_split_tiles(problem, l2_bytes: int, sms: int) -> bool:
    """Split-K's rule whatever the layouts it takes: ``pays_split`` where the tiles pay
    (``tiles_pay``)."""
    return pays_split(problem, l2_bytes, sms) and tiles_pay(problem)


def fits_split(problem, l2_bytes: int, sms: int) -> bool:
    """Split-K's rule: ``pays_split`` where the head dim's tiles pay (``tiles_pay``), on a cache
    layout it takes (``LAYOUTS``)."""
    return pays_split_tiles(problem, l2_bytes, sms) and problem.layout in LAYOUTS["split-k"]


def rule_tile(layout: str, dims: int) -> int:
    """The consumers' tile by rule: 64 tokens where the tile rule is on and they fit, else 32."""
    return 64 if WS_TILE_RULE and wide_tile_fits(layout, dims) else WS_BLOCK_N


def balanced(problem, sms: int) -> bool:
    """One 128-row program a SM runs a dense batch as well as the tile kernels' 64-row programs
    (a KV head's rows on two SMs, each tile by TMA): its ring fills (``program_tokens``, as the
    tile kernels' rules measure it, at least ``WS_STAGES`` tiles) and no sequence is a tail (its
    tokens at most all programs' tokens over the SMs: the longest runs on one SM, not two)."""
    spans = problem.attended_lens
    programs = triton.cdiv(problem.q_len * problem.group_size, WS_ROWS) * problem.num_kv_heads
    ring = WS_STAGES * rule_tile(problem.layout, sum(rule_dims(problem)))
    return (program_tokens(problem) >= ring
            and max(spans) * sms <= sum(spans) * programs)


def pays_dense_balanced(problem, l2_bytes: int, sms: int) -> bool:
    """One pass's design conditions (``pays``) on a dense cache it runs ``balanced``."""
    return pays(problem, l2_bytes, sms) and problem.layout == "dense" and balanced(problem, sms)


def fits(problem, l2_bytes: int, sms: int) -> bool:
    """One-pass's rule: where the design pays, on a cache layout it takes (``LAYOUTS``), dense
    ones where it runs them ``balanced``."""
    return (pays(problem, l2_bytes, sms) and problem.layout in LAYOUTS["one-pass"]
            and (problem.layout == "paged" or balanced(problem, sms)))


def smem_bytes(stages: int, block_n: int, dims: int, itemsize: int) -> int:
    """A program's shared memory: the ring's K and V slots and the 128 query rows, plus 2 KB for
    the barriers and alignment (~0.3-1.2 KB measured)."""
    return (stages * block_n * 2 + WS_ROWS) * dims * itemsize + 2048


def ws_config(problem, config: dict | None, l2_bytes: int, sms: int,
              split: bool = False) -> dict | None:
    """The warp-specialized kernel's compile-time shape for ``problem``, or None where the tile
    kernels take it (``split``: split-K's): ``WARP_SPEC`` 1 in ``config`` asks for it (refused,
    naming the rule, where it cannot run or ``config`` sets what it sets itself otherwise than
    ``OWN``), 0 keeps it off; without either the rule decides (``fits``, ``fits_split``, where
    ``BY_RULE`` has it on) unless ``config`` names anything of ``OWN`` or ``TAKEN`` (a launch
    choice of the tile kernels')."""
    config = config or {}
    variant = "split-k" if split else "one-pass"
    asked = config.get("WARP_SPEC")
    if asked not in (None, 0, 1):
        raise ProblemError(f"config: WARP_SPEC={asked!r}: must be 0 or 1")
    if asked == 1:
        if problem.itemsize != 2 or problem.kv_itemsize != 2:
            raise ProblemError(f"config: WARP_SPEC=1 needs 16-bit queries and K/V (here "
                               f"{problem.dtype}, {problem.kv_dtype}): the warpgroup MMA reads "
                               "its shared operands as stored")
        other = {k: config[k] for k in OWN if k in config and config[k] != OWN[k]}
        if other:
            raise ProblemError(f"config: WARP_SPEC=1 with {other}: the warp-specialized kernel "
                               f"sets these itself ({OWN}): three warpgroups, one program a "
                               "SM, and the warpgroup MMA")
    elif (asked == 0 or any(k in config for k in (*OWN, *TAKEN))
          or not BY_RULE[variant]
          or not (fits_split if split else fits)(problem, l2_bytes, sms)):
        return None
    dim_split = config.get("DIM_SPLIT", dim_split_rule(problem))
    head_dim_pad, d_hi = head_dim_tiles(problem.head_dim, dim_split)
    ps = problem.page_size
    paged = problem.layout == "paged"
    tma = config.get("DENSE_TMA", int("dense" in LAYOUTS[variant]))
    if tma not in (0, 1):
        raise ProblemError(f"config: DENSE_TMA={tma!r}: must be 0 or 1")
    block_n = config.get("BLOCK_N", rule_tile(problem.layout, head_dim_pad + d_hi))
    dims = head_dim_pad + d_hi
    stages = config.get("NUM_STAGES", WS_STAGES)
    if block_n not in WS_TILES or stages not in WS_STAGE_RANGE:
        raise ProblemError(f"config: WARP_SPEC=1 with BLOCK_N={block_n}, NUM_STAGES={stages}: the "
                           f"warp-specialized kernel takes BLOCK_N in {WS_TILES} (its consumers' "
                           f"accumulators) and NUM_STAGES in {WS_STAGE_RANGE}")
    smem = smem_bytes(stages, block_n, dims, problem.itemsize)
    if smem > SMEM_BYTES:
        raise ProblemError(f"config: WARP_SPEC=1 with BLOCK_N={block_n}, NUM_STAGES={stages} at "
                           f"{dims} dims: {smem} B of shared memory, more than a "
                           f"program has on sm_90 ({SMEM_BYTES} B)")
    per_page = paged and (block_n % ps == 0 or ps % block_n == 0)
    return dict(HEAD_DIM=problem.head_dim, HEAD_DIM_PAD=head_dim_pad, D_HI=d_hi,
                BLOCK_N=block_n, IS_PAGED=paged, PAGE_SIZE=ps if per_page else 0,
                NUM_STAGES=stages, SOFTCAP=problem.softcap is not None,
                ROW_SPANS=problem.q_len > 1, DENSE_TMA=int(tma and not paged),
                num_warps=PARTITION_WARPS.value)


def reported(cfg: dict) -> dict:
    """What Launch.config records: the tile, ring, rows, head-dim tiles and the partitions."""
    shown = {**cfg, **OWN, "BLOCK_H": WS_ROWS, "WARP_SPEC": 1}
    return tiles_reported(shown, ("BLOCK_N", "BLOCK_H", "D_HI", "PAGE_SIZE", "NUM_STAGES",
                                  "DENSE_TMA", "WGMMA", "WARP_SPEC", "MIN_BLOCKS", "num_warps"))


def grid(problem) -> tuple[int, int]:
    """``impls.plan.one_pass_grid`` in row blocks of WS_ROWS."""
    return planner.one_pass_grid(problem, triton.cdiv(problem.q_len * problem.group_size, WS_ROWS))
