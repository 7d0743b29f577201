"""Triton split-K decode (flash-decoding) over a balanced plan, on the dense or the paged layout.

Algorithm: ``impls.plan`` cuts the batch into work items (a token range of one sequence, at most
a chunk of whole tiles and pages, sized so the items fill the GPU without one outlasting the
rest; ``num_splits`` forces a uniform cut). One kernel, grid (num_kv_heads x row blocks,
num_items): the program of item ``pid_i`` attends over its range for its GQA group (a
multi-token query's tokens x the group, in blocks of ``BLOCK_H`` rows); an item that is a whole
sequence writes the final ``out`` and ``lse``, a piece of a split one writes its normalised
partial output (float32) and its LSE to its slot of the workspace. The combine kernel, grid
(num_merges, blocks of the q_len x num_q_heads rows), merges each split sequence over its own
slots, out = sum_s exp(lse_s - lse) * out_s with lse = log(sum_s exp(lse_s)), in blocks of
slots. ``MERGE=fused`` merges in the split kernel instead: each piece counts itself done on its
(sequence, KV head)'s counter and the program that finishes last merges (one launch, but the
merge of a group then runs in one program).
The plan is made in ``prepare`` from the host lengths (outside the timed call; the launch's
``plan`` callable redoes it into the same workspace, for the harness to time).
Why: at batch 1 the one-pass grid has num_kv_heads programs for 100+ SMs, and in a ragged batch
the longest sequence sets the time; splitting fills the GPU and cuts the tail. The cost is the
partials' round trip (a slot x Hq x D floats per piece of a split sequence, tiny next to the
cache) and a second launch (or, fused, a merge serialised in the last piece's program).
Expected bottleneck: HBM bandwidth once the items cover the SMs; launch and merge overhead at
short sequences.
"""

import torch
import triton
import triton.language as tl

from impls import plan as planner
from impls.common import (kv_scale_args, l2_bytes, mask_args, query_args, require_e4m3_hardware,
                          sm_count, tile_kernel_args)
from impls.registry import Launch, Unsupported
from impls.triton._common import (attend, compile_capped, interpreting, pick_launch_config,
                                  reported, sharing_sms, split_launch_config, store_rows)

# Programs of the split kernel resident per SM in the CPU interpreter (nothing compiled to ask);
# on a GPU the compiled kernel's registers and shared memory say (planner.residency)
RESIDENT_PROGRAMS = 1
COMBINE_WARPS = 4  # the combine's tiles are planner.COMBINE_TILE floats at most


# runtime ints that vary per problem are not specialised (fewer recompiles, same code)
@triton.jit(do_not_specialize=["page_size", "group_size", "chunk", "num_kv_heads", "q_len",
                               "row_blocks"])
def split_kernel(
    q_ptr, k_ptr, v_ptr, items_ptr, block_table_ptr, out_ptr, lse_ptr, part_out_ptr, part_lse_ptr,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, stride_ob, stride_oh,
    stride_lb, stride_pos, stride_poh, stride_pls, page_size, group_size, qk_scale,
    seq_lens_ptr, counters_ptr, chunk, num_kv_heads, k_scale_ptr, v_scale_ptr, scale_stride,
    window, softcap, q_len, row_blocks,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr, D_LO: tl.constexpr, D_HI: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, IS_PAGED: tl.constexpr, PAGE_SIZE: tl.constexpr,
    UPCAST_DOT: tl.constexpr, KV_SCALED: tl.constexpr, SOFTCAP: tl.constexpr,
    ROW_SPANS: tl.constexpr, FUSED_MERGE: tl.constexpr, BLOCK_S: tl.constexpr,
):
    # KV heads (and their row blocks) vary fastest: an item's programs start together, and the
    # items' longest-first order holds across the whole grid
    pid_kvh = tl.program_id(0) // row_blocks
    row0 = tl.program_id(0) % row_blocks * BLOCK_H
    pid_i = tl.program_id(1)
    item = items_ptr + pid_i * 4  # (sequence, start, end, partial slot or -1)
    pid_b = tl.load(item)
    start = tl.load(item + 1)
    end = tl.load(item + 2)
    slot = tl.load(item + 3)
    # the plan starts a windowed sequence's pieces at the tile or page holding its first query
    # token's window start: attend masks the tokens of the first piece before it
    out, out_hi, lse = attend(q_ptr, k_ptr, v_ptr, block_table_ptr, pid_b, pid_kvh, start, end,
                              group_size, stride_qb, stride_qh, stride_kp, stride_kt, stride_kh,
                              stride_btb, page_size, qk_scale, k_scale_ptr, v_scale_ptr,
                              scale_stride, tl.load(seq_lens_ptr + pid_b), window, softcap, q_len,
                              row0, HEAD_DIM, D_LO, D_HI, BLOCK_H, BLOCK_N, IS_PAGED, PAGE_SIZE,
                              UPCAST_DOT, KV_SCALED, SOFTCAP, ROW_SPANS)
    head0 = pid_kvh * group_size
    if slot < 0:  # a whole sequence: the final result
        token0 = pid_b * q_len
        store_rows(out_ptr + token0 * stride_ob + head0 * stride_oh,
                   lse_ptr + token0 * stride_lb + head0, out, out_hi, lse, stride_ob, stride_oh,
                   stride_lb, 1, group_size, q_len, row0, BLOCK_H, HEAD_DIM, D_LO, D_HI)
    else:  # a partial: query token t's head h in row t x Hq + h of the slot
        num_q_heads = num_kv_heads * group_size
        store_rows(part_out_ptr + slot * stride_pos + head0 * stride_poh,
                   part_lse_ptr + slot * stride_pls + head0, out, out_hi, lse,
                   num_q_heads * stride_poh, stride_poh, num_q_heads, 1, group_size, q_len, row0,
                   BLOCK_H, HEAD_DIM, D_LO, D_HI)
        if FUSED_MERGE:  # the sequence's pieces are cut at ``chunk``: its slots follow from that
            pieces = tl.cdiv(tl.load(seq_lens_ptr + pid_b), chunk)
            merge_if_last(part_out_ptr + head0 * stride_poh, part_lse_ptr + head0,
                          out_ptr + pid_b * stride_ob + head0 * stride_oh,
                          lse_ptr + pid_b * stride_lb + head0,
                          counters_ptr + pid_b * num_kv_heads + pid_kvh, slot - start // chunk,
                          pieces, stride_pos, stride_poh, stride_pls, stride_oh, group_size,
                          HEAD_DIM, HEAD_DIM_PAD, BLOCK_S)


@triton.jit
def merge_if_last(part_out_ptr, part_lse_ptr, out_ptr, lse_ptr, counter_ptr, first, pieces,
                  stride_pos, stride_poh, stride_pls, stride_oh, group_size,
                  HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr, BLOCK_S: tl.constexpr):
    """The merge of one KV head's group over a split sequence's ``pieces`` partials (slots
    ``first`` on), done by the program that writes the last of them: the counter of finished
    pieces is incremented once per program, with release ordering for the partial just written
    and acquire ordering for the others' (the barrier first: every thread's stores are issued).
    The last one resets the counter for the next launch, so no launch clears it. Its loads are
    .cg (from L2): the partials are other programs' stores, and a line this SM read in an
    earlier launch must not be reused."""
    tl.debug_barrier()
    if tl.atomic_add(counter_ptr, 1, sem="acq_rel", scope="gpu") == pieces - 1:
        tl.store(counter_ptr, 0)
        offs_d = tl.arange(0, HEAD_DIM_PAD)
        for h in range(group_size):  # a head at a time
            row = h + tl.arange(0, 1)
            out, lse = merge_rows(part_out_ptr, part_lse_ptr, row, group_size, first,
                                  first + pieces, stride_pos, stride_poh, stride_pls, offs_d,
                                  HEAD_DIM, BLOCK_S, ".cg")
            tl.store(out_ptr + (row * stride_oh)[:, None] + offs_d[None, :],
                     out.to(out_ptr.dtype.element_ty), mask=(offs_d < HEAD_DIM)[None, :])
            tl.store(lse_ptr + row, lse)


@triton.jit
def merge_rows(part_out_ptr, part_lse_ptr, rows, num_rows, first, last, stride_pos, stride_poh,
               stride_pls, offs_d, HEAD_DIM: tl.constexpr, BLOCK_S: tl.constexpr,
               CACHE: tl.constexpr, ROWS_FIRST: tl.constexpr = False):
    """Partial rows ``rows`` (those below ``num_rows``; row r at ``r x stride_poh`` of a slot)
    merged over slots [first, last), as [BLOCK_S slots, rows, dims] tiles (any slot count), on
    the dims ``offs_d`` (those below HEAD_DIM): (out [rows, dims], natural-log lse [rows]),
    out = sum_s exp(lse_s - lse) * out_s, lse = log(sum_s exp(lse_s)); ``CACHE`` the loads'
    cache modifier. ``ROWS_FIRST``: tiles as [rows, slots, dims], where the rows are at least the
    program's warps: Triton then lays its warps down the rows and the sum over the slots stays
    in a thread, where down the slots it crosses warps through shared memory (with fewer rows
    than warps some warps go down the slots either way, and slots first is the faster there)."""
    S: tl.constexpr = 1 if ROWS_FIRST else 0  # the slot axis of the tiles
    rows2 = tl.expand_dims(rows, S)  # [rows, 1] or [1, rows]
    offs_s = tl.expand_dims(tl.arange(0, BLOCK_S), 1 - S)  # [1, slots] or [slots, 1]
    real = rows < num_rows
    mask_r = tl.expand_dims(real, S)
    offs_d3 = tl.expand_dims(tl.expand_dims(offs_d, 0), 0)
    # pass 1: each row's largest partial LSE (finite for a real row: every query row sees a
    # token of some item; a partial of a row that saw none of its item's tokens is -inf)
    lse_max = tl.full((rows2 + offs_s).shape, float("-inf"), tl.float32)
    for s0 in range(first, last, BLOCK_S):
        slots = s0 + offs_s
        lse_s = tl.load(part_lse_ptr + slots * stride_pls + rows2,
                        mask=(slots < last) & mask_r, other=float("-inf"), cache_modifier=CACHE)
        lse_max = tl.maximum(lse_max, lse_s)
    m = tl.where(real, tl.max(lse_max, S), 0.0)  # padding rows: no -inf - -inf
    # pass 2: weights exp(lse_s - m), weighted sum of the partials
    acc = tl.zeros([rows.shape[0], offs_d.shape[0]], tl.float32)
    w_sum = tl.zeros((rows2 + offs_s).shape, tl.float32)
    for s0 in range(first, last, BLOCK_S):
        slots = s0 + offs_s
        mask_sr = (slots < last) & mask_r
        w = tl.exp(tl.load(part_lse_ptr + slots * stride_pls + rows2, mask=mask_sr,
                           other=float("-inf"), cache_modifier=CACHE) - tl.expand_dims(m, S))
        part = tl.load(part_out_ptr + tl.expand_dims(slots * stride_pos + rows2 * stride_poh, 2)
                       + offs_d3,
                       mask=tl.expand_dims(mask_sr, 2) & (offs_d3 < HEAD_DIM), other=0.0,
                       cache_modifier=CACHE)
        acc += tl.sum(part * tl.expand_dims(w, 2), S)
        w_sum += w
    total = tl.where(real, tl.sum(w_sum, S), 1.0)
    return acc / total[:, None], m + tl.log(total)


@triton.jit(do_not_specialize=["q_len", "num_q_heads", "num_rows"])
def combine_kernel(
    part_out_ptr, part_lse_ptr, merge_seqs_ptr, merge_indptr_ptr, out_ptr, lse_ptr,
    stride_pos, stride_poh, stride_pls, stride_ob, stride_oh, stride_lb, q_len, num_q_heads,
    num_rows, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_S: tl.constexpr,
    BLOCK_R: tl.constexpr, ROWS_FIRST: tl.constexpr,
):
    """Rows ``[pid_r x BLOCK_R, +BLOCK_R)``, dims ``[pid_d x BLOCK_D, +BLOCK_D)`` of merge
    ``pid_m`` (partial row t x Hq + h: query token t, head h; ``num_rows`` = q_len x Hq) merged
    over the sequence's slots (``merge_rows``; ``planner.combine_blocks`` sizes the tiles)."""
    pid_m = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_d = tl.program_id(2) * BLOCK_D + tl.arange(0, BLOCK_D)
    pid_b = tl.load(merge_seqs_ptr + pid_m)
    first = tl.load(merge_indptr_ptr + pid_m)
    last = tl.load(merge_indptr_ptr + pid_m + 1)  # this sequence's slots: [first, last)
    out, lse = merge_rows(part_out_ptr, part_lse_ptr, rows, num_rows, first, last, stride_pos,
                          stride_poh, stride_pls, offs_d, HEAD_DIM, BLOCK_S, "", ROWS_FIRST)
    mask_r = rows < num_rows
    token = pid_b * q_len + rows // num_q_heads
    head = rows % num_q_heads
    tl.store(out_ptr + (token * stride_ob + head * stride_oh)[:, None] + offs_d[None, :],
             out.to(out_ptr.dtype.element_ty), mask=mask_r[:, None] & (offs_d < HEAD_DIM)[None, :])
    tl.store(lse_ptr + token * stride_lb + head, lse, mask=mask_r & (tl.program_id(2) == 0))


def split_args_for(inputs, out, lse, split: planner.SplitLaunch, counters, cfg: dict):
    """(split kernel's, combine kernel's) runtime arguments over ``split``'s plan."""
    p = inputs.problem
    split_args, combine_args = tile_kernel_args(inputs, out, lse, split.tensors, split.part_out,
                                                split.part_lse)
    scales, mask, rows = kv_scale_args(inputs), mask_args(p), query_args(p, cfg["BLOCK_H"])
    return ((*split_args, inputs.seq_lens, counters, split.plan.chunk, p.num_kv_heads,
             scales["k_scale_ptr"], scales["v_scale_ptr"], scales["scale_stride"],
             mask["window"], mask["softcap"], rows["q_len"], rows["row_blocks"]),
            (*combine_args, p.q_len, p.num_q_heads, p.q_len * p.num_q_heads))


def resident_programs(inputs, out, lse, cfg: dict, counters, min_blocks: int | None):
    """(programs of the split kernel one SM holds, min_blocks, register cap or None), from the
    kernel compiled for ``cfg`` (on a stand-in plan: the same argument types) under
    ``compile_capped``'s cap, by the occupancy rules."""
    if interpreting():
        planner.check_min_blocks(min_blocks, cfg["num_warps"])
        return RESIDENT_PROGRAMS, min_blocks or 0, None
    stand_in = planner.SplitLaunch.of(planner.whole_sequences(inputs.problem.seq_lens), inputs)
    args, _ = split_args_for(inputs, out, lse, stand_in, counters, cfg)
    kernel, min_blocks, cap = compile_capped(split_kernel, args, (1,),
                                             {**cfg, "BLOCK_S": planner.COMBINE_SLOTS},
                                             min_blocks, inputs)
    return (planner.residency(kernel.n_regs, kernel.metadata.shared, cfg["num_warps"],
                              planner.sm_limits(inputs.device)), min_blocks, cap)


def prepare(inputs, out, lse, num_splits: int | None = None, config: dict | None = None) -> Launch:
    require_e4m3_hardware(inputs)
    p = inputs.problem
    cfg = pick_launch_config(p, config, l2_bytes(inputs.device), sharing_sms(inputs.device),
                             split=True)
    if cfg["FUSED_MERGE"] and p.window is not None:
        raise Unsupported("merge=fused with a window: the fused merge counts a sequence's pieces "
                          "from its first token, and the plan starts them at the window's")
    if cfg["FUSED_MERGE"] and p.q_len > 1:
        raise Unsupported("merge=fused with q_len > 1: the fused merge walks one query token's "
                          "group")
    # finished pieces per (sequence, KV head) for the fused merge; zero between launches
    counters = torch.zeros(p.batch, p.num_kv_heads, dtype=torch.int32, device=inputs.device)

    def resident_of(c):  # (programs an SM, min_blocks, register cap) of the kernel compiled for c
        c = dict(c)
        min_blocks = c.pop("MIN_BLOCKS")
        if c["FUSED_MERGE"] and min_blocks is None:
            # its binary is specialised on the plan's slot count, known only after the
            # residency: the cap's checks (residency, spills) would be on another binary
            min_blocks = 0
        return resident_programs(inputs, out, lse, c, counters, min_blocks)
    if interpreting():  # no compiled kernel to hold programs: the ring as picked
        held = resident_of(cfg)
    else:
        cfg, held = split_launch_config(p, config, l2_bytes(inputs.device),
                                        sharing_sms(inputs.device), resident_of)
    cfg.pop("MIN_BLOCKS")
    resident, min_blocks, cap = held
    row_blocks = query_args(p, cfg["BLOCK_H"])["row_blocks"]
    split = planner.split_launch(inputs, resident, cfg["BLOCK_N"], num_splits,
                                 head_blocks=row_blocks, whole_pages=cfg["PAGE_SIZE"] > 0)
    split_plan = split.plan
    split_args, combine_args = split_args_for(inputs, out, lse, split, counters, cfg)
    separate_merge = split_plan.num_merges and not cfg["FUSED_MERGE"]
    split_grid = (p.num_kv_heads * row_blocks, split_plan.num_items)
    num_rows = p.q_len * p.num_q_heads
    tiles = planner.combine_blocks(split_plan.num_merges, num_rows, split_plan.max_items_per_seq,
                                   cfg["HEAD_DIM_PAD"], sm_count(inputs.device))
    combine_grid = tiles.grid(split_plan.num_merges, num_rows, p.head_dim)
    # the split kernel reads BLOCK_S only to merge fused: else the binary residency was read from
    # (its merge takes a head's whole row: a combine program's wider slot tiles would not fit)
    split_block_s = min(tiles.slots, planner.COMBINE_SLOTS) if cfg["FUSED_MERGE"] else \
        planner.COMBINE_SLOTS
    combine_cfg = dict(HEAD_DIM=cfg["HEAD_DIM"], BLOCK_D=tiles.dims, BLOCK_S=tiles.slots,
                       BLOCK_R=tiles.rows, ROWS_FIRST=tiles.rows >= COMBINE_WARPS,
                       num_warps=COMBINE_WARPS)

    def run():
        split_kernel[split_grid](*split_args, **cfg, BLOCK_S=split_block_s, maxnreg=cap)
        if separate_merge:
            combine_kernel[combine_grid](*combine_args, **combine_cfg)

    return Launch(run, {**split.reported(), "resident": resident, "MIN_BLOCKS": min_blocks,
                        "merge": "fused" if cfg["FUSED_MERGE"] else "kernel",
                        **reported(cfg, p)},
                  plan=split.replan)
