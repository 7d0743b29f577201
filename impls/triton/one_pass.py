"""Triton one-pass decode, on the dense or the paged layout (``IS_PAGED``).

Algorithm: grid (num_kv_heads x row blocks, batch); each program streams its sequence's K/V rows
in ``BLOCK_N``-token tiles once, for all query heads of its GQA group at once (``_common.attend``;
a multi-token query's tokens x the group, in blocks of ``BLOCK_H`` rows), and writes the final
``out`` and ``lse``. Paged: each tile's rows are gathered through the block
table (page ``block_table[b, t // page_size]``, row ``t % page_size``): one entry per page of the
tile where the page size divides the tile or the tile divides it, one per token otherwise, so any
page size works. No workspace, no second kernel.
Expected bottleneck: HBM bandwidth when batch x num_kv_heads fills the GPU; at small batch the
grid is too small (8 programs at batch 1 for Llama-3-8B) and split-K is the answer. Paged: small
pages add block-table reads and shorter contiguous runs.
"""

import triton
import triton.language as tl

from impls import plan as planner
from impls.common import (kv_scale_args, l2_bytes, mask_args, query_args, require_e4m3_hardware,
                          tile_kernel_args)
from impls.registry import Launch
from impls.triton._common import (attend, compile_capped, pick_launch_config, reported,
                                  sharing_sms, store_rows)


# runtime ints that vary per problem are not specialised (fewer recompiles, same code)
@triton.jit(do_not_specialize=["page_size", "group_size", "q_len", "row_blocks"])
def decode_kernel(
    q_ptr, k_ptr, v_ptr, seq_lens_ptr, block_table_ptr, out_ptr, lse_ptr,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, stride_ob, stride_oh,
    stride_lb, page_size, group_size, qk_scale, k_scale_ptr, v_scale_ptr, scale_stride,
    window, softcap, q_len, row_blocks,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr, D_LO: tl.constexpr, D_HI: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, IS_PAGED: tl.constexpr, PAGE_SIZE: tl.constexpr,
    UPCAST_DOT: tl.constexpr, KV_SCALED: tl.constexpr, SOFTCAP: tl.constexpr,
    ROW_SPANS: tl.constexpr,
):
    # impls.plan.one_pass_grid's order: a sequence's KV heads side by side, a head's row blocks
    # beside each other
    pid_kvh = tl.program_id(0) // row_blocks
    row0 = tl.program_id(0) % row_blocks * BLOCK_H  # the block of the KV head's query rows
    pid_b = tl.program_id(1)
    seq_len = tl.load(seq_lens_ptr + pid_b)
    out, out_hi, lse = attend(q_ptr, k_ptr, v_ptr, block_table_ptr, pid_b, pid_kvh, 0, seq_len,
                              group_size, stride_qb, stride_qh, stride_kp, stride_kt, stride_kh,
                              stride_btb, page_size, qk_scale, k_scale_ptr, v_scale_ptr,
                              scale_stride, seq_len, window, softcap, q_len, row0, HEAD_DIM, D_LO,
                              D_HI, BLOCK_H, BLOCK_N, IS_PAGED, PAGE_SIZE, UPCAST_DOT, KV_SCALED,
                              SOFTCAP, ROW_SPANS)
    head0 = pid_kvh * group_size
    token0 = pid_b * q_len
    store_rows(out_ptr + token0 * stride_ob + head0 * stride_oh, lse_ptr + token0 * stride_lb + head0,
               out, out_hi, lse, stride_ob, stride_oh, stride_lb, 1, group_size, q_len, row0,
               BLOCK_H, HEAD_DIM, D_LO, D_HI)


def prepare(inputs, out, lse, config: dict | None = None) -> Launch:
    require_e4m3_hardware(inputs)
    p = inputs.problem
    cfg = pick_launch_config(p, config, l2_bytes(inputs.device), sharing_sms(inputs.device))
    del cfg["FUSED_MERGE"]  # nothing to merge in one pass
    min_blocks = cfg.pop("MIN_BLOCKS")
    rows = query_args(p, cfg["BLOCK_H"])
    grid = planner.one_pass_grid(p, rows["row_blocks"])
    args = tile_kernel_args(inputs, out, lse)
    kwargs = {**kv_scale_args(inputs), **mask_args(p), **rows, **cfg}
    _, min_blocks, cap = compile_capped(decode_kernel, args, grid, kwargs, min_blocks, inputs)

    def run():
        decode_kernel[grid](*args, **kwargs, maxnreg=cap)

    return Launch(run, {**reported(cfg, p), "MIN_BLOCKS": min_blocks})
