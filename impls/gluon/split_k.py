"""Gluon split-K decode (flash-decoding) over the balanced plan, on the dense or the paged layout.

Algorithm: ``impls.plan`` cuts the batch into work items (a token range of one sequence, at most
a chunk of whole tiles and pages; ``num_splits`` forces a uniform cut), as for the Triton
backend. Stage 1, grid (num_kv_heads x row blocks, num_items): the program of item ``pid_i``
runs ``_common.attend`` (a TMA ring for dense tiles, cp.async gathers for paged ones; mma_v2)
over its range for its GQA group (a multi-token query's tokens x the group, in blocks of
``BLOCK_H`` rows); an item that is a whole sequence writes the final ``out`` and
``lse``, a piece of a split one its normalised partial output (float32) and LSE to its
workspace slot. Stage 2, grid (num_merges, blocks of the q_len x num_q_heads rows), only when
something was split: a Gluon combine kernel merges each split sequence over its own slots,
out = sum_s exp(lse_s - lse) * out_s with lse = log(sum_s exp(lse_s)), in blocks of ``BLOCK_S``
slots so any count works.
Why: at batch 1 the one-pass grid has num_kv_heads programs for 100+ SMs, and in a ragged batch
the longest sequence sets the time; splitting fills the GPU and cuts the tail.
Expected bottleneck: HBM bandwidth once the items cover the SMs; launch and merge overhead at
short sequences.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.runtime.errors import PTXASError

from impls import plan as planner
from impls.common import (kv_scale_args, l2_bytes, mask_args, query_args, require_alignment,
                          sm_count, tile_kernel_args)
from impls.gluon import _ws
from impls.gluon._common import (COPY_BYTES, MAX_SHARERS, attend, kv_descriptors,
                                 pick_launch_config, reported, resident_programs, store_rows)
from impls.registry import Launch

COMBINE_WARPS = 4  # the combine's tiles are planner.COMBINE_TILE floats at most


# runtime ints that vary per problem are not specialised (fewer recompiles, same code)
@gluon.jit(do_not_specialize=["page_size", "group_size", "num_kv_heads", "q_len", "row_blocks"])
def split_kernel(
    q_ptr, k_ptr, v_ptr, items_ptr, block_table_ptr, out_ptr, lse_ptr, part_out_ptr, part_lse_ptr,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, stride_ob, stride_oh,
    stride_lb, stride_pos, stride_poh, stride_pls, page_size, group_size, qk_scale, k_desc, v_desc,
    k_hi_desc, v_hi_desc, k_scale_ptr, v_scale_ptr, scale_stride, window, softcap, q_len,
    row_blocks, seq_lens_ptr, num_kv_heads,
    HEAD_DIM: gl.constexpr, HEAD_DIM_PAD: gl.constexpr, D_HI: gl.constexpr,
    BLOCK_H: gl.constexpr, BLOCK_N: gl.constexpr, IS_PAGED: gl.constexpr, PAGE_SIZE: gl.constexpr,
    NUM_STAGES: gl.constexpr, DENSE_TMA: gl.constexpr, KV_SCALED: gl.constexpr,
    SOFTCAP: gl.constexpr, ROW_SPANS: gl.constexpr, WGMMA: gl.constexpr,
):
    # KV heads (and their row blocks) vary fastest: an item's programs start together, and the
    # items' longest-first order holds across the whole grid
    pid_kvh = gl.program_id(0) // row_blocks
    row0 = gl.program_id(0) % row_blocks * BLOCK_H
    pid_i = gl.program_id(1)
    item = items_ptr + pid_i * 4  # (sequence, start, end, partial slot or -1)
    pid_b = gl.load(item)
    start = gl.load(item + 1)
    end = gl.load(item + 2)
    slot = gl.load(item + 3)
    # the plan starts a windowed sequence's pieces at the tile or page holding its first query
    # token's window start: attend masks the tokens of the first piece before it
    out, out_hi, lse = attend(q_ptr, k_ptr, v_ptr, k_desc, v_desc, k_hi_desc, v_hi_desc,
                              block_table_ptr, pid_b, pid_kvh, start, end, group_size, stride_qb,
                              stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, page_size,
                              qk_scale, k_scale_ptr, v_scale_ptr, scale_stride,
                              gl.load(seq_lens_ptr + pid_b), window, softcap, q_len, row0,
                              HEAD_DIM, HEAD_DIM_PAD, D_HI, BLOCK_H, BLOCK_N, IS_PAGED, PAGE_SIZE,
                              NUM_STAGES, DENSE_TMA, KV_SCALED, SOFTCAP, ROW_SPANS, WGMMA)
    head0 = pid_kvh * group_size
    if slot < 0:  # a whole sequence: the final result
        token0 = pid_b * q_len
        store_rows(out_ptr + token0 * stride_ob + head0 * stride_oh,
                   lse_ptr + token0 * stride_lb + head0, out, out_hi, lse, stride_ob, stride_oh,
                   stride_lb, group_size, q_len, row0, BLOCK_H, HEAD_DIM, HEAD_DIM_PAD, D_HI, WGMMA)
    else:  # a partial: query token t's head h in row t x Hq + h of the slot
        num_q_heads = num_kv_heads * group_size
        store_rows(part_out_ptr + slot * stride_pos + head0 * stride_poh,
                   part_lse_ptr + slot * stride_pls + head0, out, out_hi, lse,
                   num_q_heads * stride_poh, stride_poh, num_q_heads, group_size, q_len, row0,
                   BLOCK_H, HEAD_DIM, HEAD_DIM_PAD, D_HI, WGMMA)


@gluon.jit(do_not_specialize=["q_len", "num_q_heads", "num_rows"])
def combine_kernel(
    part_out_ptr, part_lse_ptr, merge_seqs_ptr, merge_indptr_ptr, out_ptr, lse_ptr,
    stride_pos, stride_poh, stride_pls, stride_ob, stride_oh, stride_lb, q_len, num_q_heads,
    num_rows, HEAD_DIM: gl.constexpr, BLOCK_D: gl.constexpr, BLOCK_S: gl.constexpr,
    BLOCK_R: gl.constexpr, WARPS_R: gl.constexpr, VEC: gl.constexpr,
):
    """Rows ``[pid_r x BLOCK_R, +BLOCK_R)``, dims ``[pid_d x BLOCK_D, +BLOCK_D)`` of merge
    ``pid_m`` (partial row t x Hq + h: query token t, head h; ``num_rows`` = q_len x Hq) merged
    over the sequence's slots as [BLOCK_S slots, BLOCK_R rows, BLOCK_D dims] tiles
    (``planner.combine_blocks``)."""
    # a row's dims across the lanes, VEC a lane (BLOCK_D / 32, 4 at most); WARPS_R warps down the
    # rows, the rest down the slots (one long sequence: a row a program, its many slots on every
    # warp)
    L3: gl.constexpr = gl.BlockedLayout([1, 1, VEC], [1, 1, 32],
                                        [gl.num_warps() // WARPS_R, WARPS_R, 1], [2, 1, 0])
    SR: gl.constexpr = gl.SliceLayout(2, L3)  # [slots, rows]
    RD: gl.constexpr = gl.SliceLayout(0, L3)  # [rows, dims]
    pid_m = gl.program_id(0)
    row0 = gl.program_id(1) * BLOCK_R
    pid_b = gl.load(merge_seqs_ptr + pid_m)
    first = gl.load(merge_indptr_ptr + pid_m)
    last = gl.load(merge_indptr_ptr + pid_m + 1)  # this sequence's slots: [first, last)
    offs_s = gl.arange(0, BLOCK_S, gl.SliceLayout(1, SR))
    rows = row0 + gl.arange(0, BLOCK_R, gl.SliceLayout(0, SR))
    dim0 = gl.program_id(2) * BLOCK_D
    offs_d = dim0 + gl.arange(0, BLOCK_D, gl.SliceLayout(0, gl.SliceLayout(1, L3)))
    mask_r = rows < num_rows
    # pass 1: each row's largest partial LSE (finite for a real row: every query row sees a
    # token of some item; a partial of a row that saw none of its item's tokens is -inf)
    lse_max = gl.full([BLOCK_S, BLOCK_R], float("-inf"), gl.float32, SR)
    for s0 in range(first, last, BLOCK_S):
        slots = s0 + offs_s
        lse_s = gl.load(part_lse_ptr + slots[:, None] * stride_pls + rows[None, :],
                        mask=(slots < last)[:, None] & mask_r[None, :], other=float("-inf"))
        lse_max = gl.maximum(lse_max, lse_s)
    m = gl.where(mask_r, gl.max(lse_max, 0), 0.0)  # padding rows: no -inf - -inf
    # pass 2: weights exp(lse_s - m), weighted sum of the partials
    acc = gl.zeros([BLOCK_R, BLOCK_D], gl.float32, RD)
    w_sum = gl.zeros([BLOCK_S, BLOCK_R], gl.float32, SR)
    for s0 in range(first, last, BLOCK_S):
        slots = s0 + offs_s
        mask_sr = (slots < last)[:, None] & mask_r[None, :]
        w = gl.exp(gl.load(part_lse_ptr + slots[:, None] * stride_pls + rows[None, :],
                           mask=mask_sr, other=float("-inf")) - m[None, :])
        part = gl.load(part_out_ptr + slots[:, None, None] * stride_pos
                       + rows[None, :, None] * stride_poh + offs_d[None, None, :],
                       mask=mask_sr[:, :, None] & (offs_d < HEAD_DIM)[None, None, :], other=0.0)
        acc += gl.sum(part * w[:, :, None], 0)
        w_sum += w
    total = gl.where(mask_r, gl.sum(w_sum, 0), 1.0)
    token = pid_b * q_len + rows // num_q_heads
    head = rows % num_q_heads
    gl.store(lse_ptr + token * stride_lb + head, m + gl.log(total),
             mask=mask_r & (gl.program_id(2) == 0))
    # the output tile's own layout for its addresses
    rows_o = row0 + gl.arange(0, BLOCK_R, gl.SliceLayout(1, RD))
    offs_do = dim0 + gl.arange(0, BLOCK_D, gl.SliceLayout(0, RD))
    token_o = pid_b * q_len + rows_o // num_q_heads
    head_o = rows_o % num_q_heads
    out = acc / gl.convert_layout(total, gl.SliceLayout(1, RD))[:, None]
    gl.store(out_ptr + (token_o * stride_ob + head_o * stride_oh)[:, None] + offs_do[None, :],
             out.to(out_ptr.dtype.element_ty),
             mask=(rows_o < num_rows)[:, None] & (offs_do < HEAD_DIM)[None, :])


def combine_launch(p, split_plan, sms: int) -> tuple[tuple[int, int, int], dict]:
    """The combine's grid and constants for ``split_plan`` (``planner.combine_blocks``' tiles)."""
    num_rows = p.q_len * p.num_q_heads
    row_dims = 1 << (p.head_dim - 1).bit_length()  # a partial's row, padded in one tile
    tiles = planner.combine_blocks(split_plan.num_merges, num_rows, split_plan.max_items_per_seq,
                                   row_dims, sms)
    return tiles.grid(split_plan.num_merges, num_rows, p.head_dim), dict(
        HEAD_DIM=p.head_dim, BLOCK_D=tiles.dims, BLOCK_S=tiles.slots, BLOCK_R=tiles.rows,
        WARPS_R=min(tiles.rows, COMBINE_WARPS), VEC=max(1, min(4, tiles.dims // 32)),
        num_warps=COMBINE_WARPS)


def prepare(inputs, out, lse, num_splits: int | None = None, config: dict | None = None) -> Launch:
    p = inputs.problem
    require_alignment(inputs, COPY_BYTES)

    lens = planner.host_lengths(inputs)
    l2 = l2_bytes(inputs.device)
    ws = _ws.ws_config(p, config, l2, sm_count(inputs.device), split=True)
    config = {k: v for k, v in (config or {}).items() if k != "WARP_SPEC"}
    if ws is not None:
        return _prepare_ws(inputs, out, lse, ws, num_splits, lens)

    def plan_for(cfg, programs_per_sm):  # the batch's plan from the host lengths (every step)
        return planner.for_launch(inputs, programs_per_sm, cfg["BLOCK_N"], num_splits,
                                  query_args(p, cfg["BLOCK_H"])["row_blocks"],
                                  whole_pages=cfg["PAGE_SIZE"] > 0, seq_lens=lens)

    def kernel_args(cfg, split):
        split_args, combine_args = tile_kernel_args(inputs, out, lse, split.tensors,
                                                    split.part_out, split.part_lse)
        return (*split_args, *kv_descriptors(inputs, cfg), *kv_scale_args(inputs).values(),
                *mask_args(p).values(), *query_args(p, cfg["BLOCK_H"]).values(), inputs.seq_lens,
                p.num_kv_heads), (*combine_args, p.q_len, p.num_q_heads, p.q_len * p.num_q_heads)

    # compiled for a cfg on a stand-in plan (the same argument types) to read its residency
    stand_in = planner.SplitLaunch.of(planner.whole_sequences(p.seq_lens), inputs)

    def compiled_residency(cfg):  # (programs a SM holds, min_blocks, register cap or None)
        min_blocks = cfg.pop("MIN_BLOCKS")
        split_args, _ = kernel_args(cfg, stand_in)
        kernel, min_blocks, cap = planner.capped_warmup(split_kernel, split_args, (1,), cfg,
                                                        min_blocks, inputs, PTXASError)
        return resident_programs(kernel, cfg, inputs.device), min_blocks, cap

    # TMA streams an SM's share of HBM with one program in 64 KB slots: the plan fills the SMs
    # with the items of one resident program each. The cp.async ring wants several programs per
    # SM to hide each other's softmax: small slots, or larger ones where the plan for them leaves
    # fewer programs per SM (a short batch).
    cfg = pick_launch_config(p, config, sharers=1, tma=True, l2_bytes=l2, split=True)
    if not cfg["DENSE_TMA"]:  # paged, or DENSE_TMA=0 asked for
        cfg = pick_launch_config(p, config, l2_bytes=l2, split=True)
    resident, min_blocks, cap = compiled_residency(cfg)
    split_plan = plan_for(cfg, resident)
    if not cfg["DENSE_TMA"]:
        sharers = planner.sharers(split_plan.num_items * p.num_kv_heads, sm_count(inputs.device))
        if sharers < MAX_SHARERS:
            cfg = pick_launch_config(p, config, sharers=sharers, l2_bytes=l2, split=True)
            resident, min_blocks, cap = compiled_residency(cfg)
            split_plan = plan_for(cfg, resident)

    split = planner.SplitLaunch.of(split_plan, inputs, lambda: plan_for(cfg, resident))
    split_args, combine_args = kernel_args(cfg, split)
    split_grid = (p.num_kv_heads * query_args(p, cfg["BLOCK_H"])["row_blocks"], split_plan.num_items)
    combine_grid, combine_cfg = combine_launch(p, split_plan, sm_count(inputs.device))

    def run():
        split_kernel[split_grid](*split_args, **cfg, maxnreg=cap)
        if split_plan.num_merges:
            combine_kernel[combine_grid](*combine_args, **combine_cfg)

    return Launch(run, {**split.reported(), "resident": resident, "MIN_BLOCKS": min_blocks,
                        "WARP_SPEC": 0, **reported(cfg)},
                  plan=split.replan)


def _prepare_ws(inputs, out, lse, cfg: dict, num_splits: int | None, lens) -> Launch:
    """Split-K on the warp-specialized kernel (``impls.gluon._ws.ws_split_kernel``): one program
    an SM (its 12 warps take the register file, its ring and rows up to 227 KB of shared memory),
    128 rows a program, the items starting on whole tiles (and pages, where it reads the table a
    page), then the same combine."""
    p = inputs.problem
    row_blocks = query_args(p, _ws.WS_ROWS)["row_blocks"]

    def plan_for():
        return planner.for_launch(inputs, 1, cfg["BLOCK_N"], num_splits, row_blocks,
                                  whole_pages=cfg["PAGE_SIZE"] > 0, seq_lens=lens)

    split_plan = plan_for()
    split = planner.SplitLaunch.of(split_plan, inputs, plan_for)
    split_args, combine_args = tile_kernel_args(inputs, out, lse, split.tensors, split.part_out,
                                                split.part_lse)
    args = (*split_args, *kv_descriptors(inputs, cfg), *mask_args(p).values(),
            *query_args(p, _ws.WS_ROWS).values(),
            inputs.seq_lens, p.num_kv_heads)
    combine_args = (*combine_args, p.q_len, p.num_q_heads, p.q_len * p.num_q_heads)
    grid = (p.num_kv_heads * row_blocks, split_plan.num_items)
    combine_grid, combine_cfg = combine_launch(p, split_plan, sm_count(inputs.device))

    def run():
        _ws.ws_split_kernel[grid](*args, **cfg, maxnreg=_ws.KERNEL_MAXNREG)
        if split_plan.num_merges:
            combine_kernel[combine_grid](*combine_args, **combine_cfg)

    return Launch(run, {**split.reported(), "resident": 1, **_ws.reported(cfg)},
                  plan=split.replan)
