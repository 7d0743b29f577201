"""Helion split-K decode (flash-decoding) over a balanced plan, on the dense or the paged layout.

Algorithm: ``impls.plan`` cuts the batch into work items (a token range of one sequence, at most
a chunk of whole tiles, sized so the items fill the GPU without one outlasting the rest;
``num_splits`` forces a uniform cut). ``split_kernel`` tiles (num_kv_heads, num_items,
group_size) with block sizes [1, 1, BLOCK_H]: the program of item ``pid_i`` attends over its
range for its GQA group; an item that is a whole sequence writes the final ``out`` and ``lse``,
a piece of a split one writes its normalised partial output (float32) and its LSE to its slot of
the workspace. ``combine_kernel`` tiles (num_merges, num_q_heads) and merges each split
sequence over its own slots, out = sum_s exp(lse_s - lse) * out_s with lse = log(sum_s
exp(lse_s)), online over blocks of ``BLOCK_S`` slots.
The plan is made in ``prepare`` from the host lengths (outside the timed call; the launch's
``plan`` callable redoes it into the same workspace, for the harness to time).
Why: at batch 1 the one-pass grid has num_kv_heads programs for 100+ SMs, and in a ragged batch
the longest sequence sets the time; splitting fills the GPU and cuts the tail.
Expected bottleneck: HBM bandwidth once the items cover the SMs; launch and merge overhead at
short sequences (two Helion launches, each with its Python launcher).
"""

import helion
import helion.language as hl
import torch

from impls import plan as planner
from impls.common import LN2, LOG2E, require_e4m3_hardware
from impls.helion import _common
from impls.registry import Launch

# Programs of the split kernel resident per SM where nothing is compiled (the interpreter); on a
# GPU the plan is sized by the compiled kernel's (compiled_residency): a paged cache's K/V are
# gathered with plain loads, not staged in a ring, and leave room for two or three
RESIDENT_PROGRAMS = 1
PLANS = 3  # a plan, then at most two more while the kernel compiled for the last holds another count
COMBINE_BLOCK_H = 1  # query heads per combine program: one, as many programs as the Triton merge
COMBINE_BLOCK_S = 32  # partials merged per step of the combine loop (any split count works)
COMBINE_NUM_WARPS = 4


@helion.kernel(**_common.SETTINGS)
def split_kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, items: torch.Tensor,
                 block_table: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
                 part_out: torch.Tensor, part_lse: torch.Tensor, qk_scale: float,
                 k_scale: torch.Tensor, v_scale: torch.Tensor, IS_PAGED: hl.constexpr,
                 UPCAST_DOT: hl.constexpr) -> None:
    """``one_pass.decode_kernel`` over the plan's ``items`` int32 [num_items, 4] (sequence,
    start, end, slot or -1) instead of whole sequences; part_out [slots, Hq, D], part_lse
    [slots, Hq] float32."""
    batch, num_q_heads, head_dim = q.shape
    head_dim = hl.specialize(head_dim)
    num_kv_heads = k.size(2)
    group_size = num_q_heads // num_kv_heads
    page_size = k.size(1)
    num_items = items.size(0)
    max_pages = block_table.size(1)
    table_flat = block_table.view(-1)  # Helion 1.4 gathers through one tensor index at most
    k_rows = k.view(-1, num_kv_heads, head_dim)  # paged: one row per token of the pool
    v_rows = v.view(-1, num_kv_heads, head_dim)
    q_grouped = q.view(batch, num_kv_heads, group_size, head_dim)
    out_grouped = out.view(batch, num_kv_heads, group_size, head_dim)
    lse_grouped = lse.view(batch, num_kv_heads, group_size)
    part_out_grouped = part_out.view(-1, num_kv_heads, group_size, head_dim)
    part_lse_grouped = part_lse.view(-1, num_kv_heads, group_size)
    # KV heads vary fastest: an item's programs start together, and the items' longest-first
    # order holds across the whole grid
    for tile_kvh, tile_i, tile_h in hl.tile([num_kv_heads, num_items, group_size],
                                            block_size=[1, 1, None]):
        pid_kvh = tile_kvh.begin
        pid_i = tile_i.begin
        # int64: pid_b * (rows x heads x head_dim) passes 2^31 in a dense cache of > 2^31 values
        # (int32 reached an illegal address on an H100: results/nvidia-h100/2026-11-25-serving)
        pid_b = items[pid_i, 0].to(torch.int64)
        start = items[pid_i, 1]
        end = items[pid_i, 2]
        slot = items[pid_i, 3]
        q_tile = q_grouped[pid_b, pid_kvh, tile_h, :]
        m_i = hl.full([tile_h], float("-inf"), dtype=torch.float32)
        l_i = hl.zeros([tile_h], dtype=torch.float32)
        acc = hl.zeros([tile_h, head_dim], dtype=torch.float32)
        score_scale = qk_scale * k_scale[pid_kvh]  # the cache's scales: see _common.kv_scales
        for tile_n in hl.tile(start, end):  # loads indexed by tile_n are masked to [start, end)
            if IS_PAGED:  # token t: row t % page_size of page block_table[pid_b, t // page_size]
                entries = pid_b * max_pages + tile_n.index // page_size  # one tensor index:
                rows = table_flat[entries].to(torch.int64) * page_size + tile_n.index % page_size
                k_tile = k_rows[rows, pid_kvh, :]
                v_tile = v_rows[rows, pid_kvh, :]
            else:
                k_tile = k[pid_b, tile_n, pid_kvh, :]
                v_tile = v[pid_b, tile_n, pid_kvh, :]
            k_tile = k_tile.to(q_tile.dtype)  # fp8 values as the query's (exact); else no-op
            v_tile = v_tile.to(q_tile.dtype)
            if UPCAST_DOT:
                s = hl.dot(q_tile.to(torch.float32), k_tile.to(torch.float32).T)
            else:
                s = hl.dot(q_tile, k_tile.T, out_dtype=torch.float32)
            s = torch.where(tile_n.index[None, :] < end, s * score_scale, float("-inf"))
            m_new = torch.maximum(m_i, torch.amax(s, -1))
            alpha = torch.exp2(m_i - m_new)
            p = torch.exp2(s - m_new[:, None])
            l_i = l_i * alpha + torch.sum(p, -1)
            p = p.to(v_tile.dtype)  # P.V on the tensor cores in the input dtype, fp32 accumulation
            if UPCAST_DOT:
                acc = hl.dot(p.to(torch.float32), v_tile.to(torch.float32),
                             acc=acc * alpha[:, None])
            else:
                acc = hl.dot(p, v_tile, acc=acc * alpha[:, None])
            m_i = m_new
        acc = acc * v_scale[pid_kvh]
        result = acc / l_i[:, None]
        result_lse = (m_i + torch.log2(l_i)) * LN2
        if slot < 0:  # a whole sequence: the final result
            out_grouped[pid_b, pid_kvh, tile_h, :] = result.to(out.dtype)
            lse_grouped[pid_b, pid_kvh, tile_h] = result_lse
        else:
            part_out_grouped[slot, pid_kvh, tile_h, :] = result
            part_lse_grouped[slot, pid_kvh, tile_h] = result_lse


@helion.kernel(**_common.SETTINGS)
def combine_kernel(part_out: torch.Tensor, part_lse: torch.Tensor, merge_seqs: torch.Tensor,
                   merge_indptr: torch.Tensor, out: torch.Tensor, lse: torch.Tensor) -> None:
    """Merge each split sequence ``merge_seqs[m]`` over its slots [merge_indptr[m],
    merge_indptr[m + 1]) of part_out [slots, Hq, D] / part_lse [slots, Hq] into out, lse."""
    num_q_heads = out.size(1)
    head_dim = hl.specialize(out.size(2))
    num_merges = merge_seqs.size(0)
    for tile_m, tile_h in hl.tile([num_merges, num_q_heads], block_size=[1, None]):
        pid_m = tile_m.begin
        pid_b = merge_seqs[pid_m]
        first = merge_indptr[pid_m]
        last = merge_indptr[pid_m + 1]
        lse_max = hl.full([tile_h], float("-inf"), dtype=torch.float32)
        w_sum = hl.zeros([tile_h], dtype=torch.float32)
        acc = hl.zeros([tile_h, head_dim], dtype=torch.float32)
        for tile_s in hl.tile(first, last):  # every slot's LSE is finite (items hold tokens)
            valid = tile_s.index[:, None] < last
            lse_s = torch.where(valid, part_lse[tile_s, tile_h], float("-inf"))
            m_new = torch.maximum(lse_max, torch.amax(lse_s, 0))
            alpha = torch.exp(lse_max - m_new)
            w = torch.exp(lse_s - m_new[None, :])  # [BLOCK_S, BLOCK_H]: 0 on masked slots
            acc = acc * alpha[:, None] + torch.sum(w[:, :, None] * part_out[tile_s, tile_h, :], 0)
            w_sum = w_sum * alpha + torch.sum(w, 0)
            lse_max = m_new
        out[pid_b, tile_h, :] = (acc / w_sum[:, None]).to(out.dtype)
        lse[pid_b, tile_h] = lse_max + torch.log(w_sum)


def compiled_residency(args: tuple, cfg: dict, device) -> int:
    """Programs an SM of the Triton kernel Helion writes for ``split_kernel(*args)`` under
    ``cfg`` (static shapes: these arguments' own kernel; the launch's, where they are its), by the
    occupancy rules: it goes through Helion's launcher hook, which hands over the Triton kernel
    and the launch's options (the warps as launched) without launching it."""
    held = []

    def load(triton_kernel, grid, *launch_args, num_warps, num_stages, ptx_options=None,
             launch_cooperative_grid=False, **options):
        # the options as helion.runtime.default_launcher passes them: the launch then finds
        # this binary in Triton's cache, keyed by them
        options = dict(options, num_warps=num_warps, num_stages=num_stages,
                       launch_cooperative_grid=launch_cooperative_grid)
        if ptx_options is not None:
            options["ptx_options"] = ptx_options
        binary = planner.loaded_binary(triton_kernel, grid, launch_args, options)
        # the binary's warps: a warp-specialised kernel launches more than the config asks
        held.append(planner.residency(binary.n_regs, binary.metadata.shared,
                                      binary.metadata.num_warps, planner.sm_limits(device)))
    split_kernel.bind(args).compile_config(_common.helion_config(cfg))(*args, _launcher=load)
    return min(held)


def prepare(inputs, out, lse, num_splits: int | None = None, config: dict | None = None,
            tune: bool = False) -> Launch:
    p = inputs.problem
    require_e4m3_hardware(inputs)  # Helion writes Triton
    if _common.interpreting():
        _common.interpreter_math()
    cfg = _common.pick_launch_config(p, config)
    table = inputs.block_table if p.layout == "paged" else inputs.seq_lens.view(-1, 1)
    upcast = _common.interpreting() and p.dtype == "bfloat16"

    def args_of(split):
        return (inputs.q, inputs.k, inputs.v, split.tensors["items"], table, out, lse,
                split.part_out, split.part_lse, p.scale * LOG2E, *_common.kv_scales(inputs),
                p.layout == "paged", upcast)
    # the plan sized for the kernel's residency, read on its own arguments (a tuned launch keeps
    # the rule's kernel's plan: the autotuner times its candidates on it)
    resident = RESIDENT_PROGRAMS
    for attempt in range(PLANS):
        split = planner.split_launch(inputs, resident, cfg["BLOCK_N"], num_splits)
        split_args = args_of(split)
        if _common.interpreting():
            break
        held = compiled_residency(split_args, cfg, inputs.device)
        if held == resident or attempt == PLANS - 1:  # the last plan stands, for its own count
            break
        resident = held
    split_plan, part_out, part_lse = split.plan, split.part_out, split.part_lse
    split_bound, reported, tuning_s = _common.bind(split_kernel, split_args, p, config, tune)
    combine_args = (part_out, part_lse, split.tensors["merge_seqs"], split.tensors["merge_indptr"],
                    out, lse)
    combine_bound = combine_kernel.bind(combine_args)
    combine_bound.set_config(helion.Config(block_sizes=[COMBINE_BLOCK_H, COMBINE_BLOCK_S],
                                           num_warps=COMBINE_NUM_WARPS))

    def run():
        split_bound(*split_args)
        if split_plan.num_merges:
            combine_bound(*combine_args)

    return Launch(run, {**split.reported(), "resident": resident, **reported}, plan=split.replan,
                  tuning_s=tuning_s)
