"""CuPy raw-CUDA split-K decode over a balanced plan (kernels: ``split_k.cu`` +
``decode_common.cuh``).

Algorithm: ``impls.plan`` cuts the batch into work items (a token range of one sequence, whole
loop steps and pages, sized so the items fill the GPU without one outlasting the rest;
``num_splits`` forces a uniform cut). Stage 1, grid (num_kv_heads x num_head_blocks, num_items):
each CTA runs the one-pass kernel's loop over its item; a whole sequence writes the final out and
lse, a piece of a split one a normalised float32 partial and its LSE. Stage 2, only when something
was split: ``combine_kernel``, grid (ceil(q_len x num_q_heads / NUM_WARPS), num_merges), merges
each split sequence over its own slots, weighted by exp(lse_s - max lse), a warp per query row; or
(``MERGE=fused``, the default for short pieces) the split kernel's CTA that finishes a (sequence,
row block)'s pieces last, counted by an atomic it resets, merges them (one launch). Works on both
layouts (IS_PAGED).
Why: fills the SMs at small batch and cuts a ragged batch's tail; costs the partials' round trip
(tiny next to the cache) and a second launch (or, fused, a merge in the CTA that finishes last).
Expected bottleneck: HBM bandwidth once there are a few CTAs per SM; launch overhead of the two
kernels at short sequences.
"""

import numpy as np
import torch

from impls import plan as planner
from impls.common import LOG2E, cache_args, require_alignment
from impls.cupy._build import (LOAD_BYTES, alone_sharers, dynamic_smem, get_kernel, grid,
                               launch_config, launcher, num_head_blocks, reported, resident_ctas,
                               mask_kernel_args, scale_args, split_merge, step_tokens, view)
from impls.registry import Launch

# The fused merge up to chunks of this many tokens, where a second launch is a large share of a
# short item's time; beyond them the combine kernel measured faster
# (results/nvidia-h100/2026-11-24-cupy-merge/)
FUSED_MAX_TOKENS = 512
# Slots a warp of the fused merge may walk beyond what the combine kernel's warp walks (one pass
# of its lanes over the slots): the fused merge runs a CTA's rows on its warps, one after another
# where there are more rows than warps, while the combine kernel gives every row a warp of its own
FUSED_EXTRA_SLOTS = 32
MERGE_BATCH = 8  # slots' rows a warp of the merge loads before it adds them (split_k.cu's)


def warps_per_row(split_plan: planner.SplitPlan, rows: int, num_warps: int, sms: int) -> int:
    """Warps of the combine kernel that share a query row's slots (a power of two dividing the
    CTA's warps): one while the ``rows`` (q_len x Hq) of the split sequences fill the ``sms``;
    more, each walking a contiguous share, while they leave SMs idle and each share is still a
    batch of loads (MERGE_BATCH slots) or more."""
    shared = 1
    while (num_warps % (2 * shared) == 0 and  # shares in one CTA (any NUM_WARPS a config sets)
           -(-rows * 2 * shared // num_warps) * split_plan.num_merges <= sms and
           split_plan.max_items_per_seq >= 2 * shared * MERGE_BATCH):
        shared *= 2
    return shared


def pick_merge(split_plan: planner.SplitPlan, rows: int, num_warps: int, walk: int) -> str:
    """The merge for a plan that asks for none: fused where its pieces are short and the last
    CTA's warps merge its ``rows`` query rows about as fast as the combine kernel's warps would,
    ``walk`` the slots one of those walks."""
    pieces = split_plan.max_items_per_seq
    serial = -(-rows // num_warps) * pieces  # slots one warp of the fused merge walks
    return ("fused" if split_plan.num_merges and split_plan.chunk <= FUSED_MAX_TOKENS and
            serial - walk <= FUSED_EXTRA_SLOTS else "kernel")


LONG_CHAIN_DIMS = 128  # past these a CTA's chain of copies outlasts a merge (the floor's case)


def shortest_item(lens: np.ndarray, step: int, ctas_per_item: int, num_sms: int,
                  head_dim: int) -> int:
    """The planner's floor on the chunk for the tensor-core loop, in tokens. A grid under a wave
    is a latency chain, and a shorter item is a shorter chain. Past LONG_CHAIN_DIMS (CuPy's CTA
    issues its copies lane by lane: its chain is the long one), where the batch is split at the
    planner's own floor anyway (a sequence longer than it), the fewest whole loop steps under it
    whose items still fit the SMs at one CTA each. Else one step only where a step's items would
    leave half the SMs idle: a cut adds a merge's latency, which a short chain does not repay."""
    if head_dim > LONG_CHAIN_DIMS and int(lens.max()) > planner.MIN_CHUNK:
        for chunk in range(step, planner.MIN_CHUNK, step):
            if int((-(-lens // chunk)).sum()) * ctas_per_item <= num_sms:
                return chunk
        return planner.MIN_CHUNK
    items = int((-(-lens // step)).sum())
    return step if 2 * items * ctas_per_item <= num_sms else planner.MIN_CHUNK


def compiled_residency(inputs, defines: dict[str, int], merge: str | None) -> int:
    """CTAs of the split kernel one SM holds, from its build by the occupancy rules: the fused
    merge's build unless the merge is fixed to the combine kernel (the plan, which needs this
    number, picks the merge; the fused build is the larger). Off a GPU, the estimate."""
    if inputs.device.type != "cuda":
        return resident_ctas(defines)
    kernel = get_kernel("split_k.cu", "split_kernel",
                        {**defines, "FUSED_MERGE": int(merge != "kernel")})
    return planner.residency(kernel.num_regs, kernel.shared_size_bytes + dynamic_smem(defines),
                             defines["NUM_WARPS"], planner.sm_limits(inputs.device))


def prepare(inputs, out, lse, num_splits: int | None = None, config: dict | None = None) -> Launch:
    p = inputs.problem
    config, merge = split_merge(config)
    lens = planner.host_lengths(inputs)
    sms = planner.sm_count(inputs.device)

    def planned_for(defines):
        step = step_tokens(defines)
        head_blocks = p.num_kv_heads * num_head_blocks(p, defines)
        # the floor follows from the lengths and the launch alone: once, not per timed plan
        shortest = (shortest_item(lens, step, head_blocks, sms, p.head_dim)
                    if defines["TENSOR_CORES"] else planner.MIN_CHUNK)
        # items start on whole loop steps (and pages)
        return planner.split_launch(inputs, compiled_residency(inputs, defines, merge), step,
                                    num_splits, num_head_blocks(p, defines), shortest=shortest,
                                    seq_lens=lens)

    defines = launch_config(inputs, config, split=True)
    planned = planned_for(defines)
    # the plan's items may be many CTAs that the rule's ring leaves alone an SM: the shared ring
    # then, unless the config names a knob of it (the re-pick would change the other one)
    if defines["TENSOR_CORES"] and not {"NUM_WARPS", "STAGES"} & set(config):
        head_blocks = p.num_kv_heads * num_head_blocks(p, defines)
        sharers = alone_sharers(p, planned.plan.num_items * head_blocks, p.batch * head_blocks,
                                sms, defines["BLOCK_H"], split=True)
        shared = launch_config(inputs, config, split=True, sharers=sharers) if sharers > 1 else defines
        if shared != defines and compiled_residency(inputs, shared, merge) > \
                compiled_residency(inputs, defines, merge):
            defines, planned = shared, planned_for(shared)
    step = step_tokens(defines)
    head_blocks = p.num_kv_heads * num_head_blocks(p, defines)
    split_plan = planned.plan
    rows = min(defines["BLOCK_H"], p.q_len * p.group_size)  # a CTA's query rows
    sharing = warps_per_row(split_plan, p.q_len * p.num_q_heads, defines["NUM_WARPS"],
                            planner.sm_count(inputs.device))
    fused = (merge or pick_merge(split_plan, rows, defines["NUM_WARPS"],
                                 -(-split_plan.max_items_per_seq // sharing))) == "fused"
    defines["FUSED_MERGE"] = int(fused)
    require_alignment(inputs, LOAD_BYTES)
    split = get_kernel("split_k.cu", "split_kernel", defines)
    combine = get_kernel("split_k.cu", "combine_kernel", defines)
    work, part_out, part_lse = planned.tensors, planned.part_out, planned.part_lse
    q, k, v = inputs.q, inputs.k, inputs.v
    table, stride_btb, page_size = cache_args(inputs)
    # finished pieces per (sequence, head block) for the fused merge, zero between launches (the
    # last piece resets its counter); one unused int otherwise
    counters = torch.zeros(p.batch * head_blocks if fused else 1, dtype=torch.int32,
                           device=q.device)
    i64, i32 = np.int64, np.int32
    split_args = (view(q), view(k), view(v), view(work["items"]), view(table), view(out), view(lse),
                  view(part_out), view(part_lse), i64(q.stride(0)), i64(q.stride(1)),
                  i64(k.stride(0)), i64(k.stride(1)), i64(k.stride(2)), i64(stride_btb),
                  i64(out.stride(0)), i64(out.stride(1)), i64(lse.stride(0)), i32(page_size),
                  i32(p.group_size), i32(num_head_blocks(p, defines)), i32(p.num_q_heads),
                  np.float32(p.scale * LOG2E), view(inputs.seq_lens), view(counters),
                  i32(split_plan.chunk), i32(step), *scale_args(inputs), *mask_kernel_args(p))
    combine_args = (view(part_out), view(part_lse), view(work["merge_seqs"]),
                    view(work["merge_indptr"]), view(out), view(lse), i64(out.stride(0)),
                    i64(out.stride(1)), i64(lse.stride(0)), i32(p.num_q_heads), i32(p.q_len),
                    i32(sharing))
    launches = [(split, grid(defines, head_blocks, split_plan.num_items), split_args,
                 dynamic_smem(defines))]
    if split_plan.num_merges and not fused:  # ``sharing`` warps per query row
        launches.append((combine, (-(-p.q_len * p.num_q_heads * sharing // defines["NUM_WARPS"]),
                                   split_plan.num_merges), combine_args, 0))

    return Launch(launcher(launches, defines),
                  {**planned.reported(), "merge": "fused" if fused else "kernel",
                   **({} if fused or not split_plan.num_merges else {"merge_warps": sharing}),
                   **reported(defines), "ITEMS_FIRST": defines["ITEMS_FIRST"]},
                  plan=planned.replan)
