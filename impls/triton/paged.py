"""Triton paged decode: one pass over a paged KV cache through the block table.

Algorithm: as the dense kernel (grid (batch, num_kv_heads), one pass, online softmax, the GQA
group sharing each K/V tile), but each tile's rows are gathered per token: page
``block_table[b, t // page_size]``, row ``t % page_size``. A per-token gather makes any page size
work (1, 16, 17, ...); when a page holds >= BLOCK_N tokens the gathered rows are still contiguous
runs of ``head_dim`` elements, so loads stay coalesced.
Expected bottleneck: HBM bandwidth; small pages add block-table reads and shorter contiguous runs.
"""

import triton
import triton.language as tl

from impls.registry import Launch
from impls.triton._common import LOG2E, attend, pick_launch_config, store_group


# runtime ints that vary per problem are not specialised (fewer recompiles, same code)
@triton.jit(do_not_specialize=["page_size", "group"])
def _decode_paged_kernel(
    q_ptr, k_ptr, v_ptr, seq_lens_ptr, block_table_ptr, out_ptr, lse_ptr,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, stride_ob, stride_oh,
    stride_lb, page_size, group, qk_scale,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr, BLOCK_H: tl.constexpr,
    BLOCK_N: tl.constexpr, UPCAST_DOT: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_kvh = tl.program_id(1)
    seq_len = tl.load(seq_lens_ptr + pid_b)
    out, lse = attend(q_ptr, k_ptr, v_ptr, block_table_ptr, pid_b, pid_kvh, 0, seq_len, group,
                      stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_btb, page_size,
                      qk_scale, HEAD_DIM, HEAD_DIM_PAD, BLOCK_H, BLOCK_N, True, UPCAST_DOT)
    head0 = pid_kvh * group
    store_group(out_ptr + pid_b * stride_ob + head0 * stride_oh, lse_ptr + pid_b * stride_lb + head0,
                out, lse, stride_oh, 1, group, BLOCK_H, HEAD_DIM, HEAD_DIM_PAD)


def prepare(inputs, out, lse) -> Launch:
    p = inputs.problem
    cfg = pick_launch_config(p)
    q, k, v, table = inputs.q, inputs.k, inputs.v, inputs.block_table
    grid = (p.batch, p.num_kv_heads)
    args = (q, k, v, inputs.seq_lens, table, out, lse,
            q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2), table.stride(0),
            out.stride(0), out.stride(1), lse.stride(0), p.page_size, p.group_size,
            p.scale * LOG2E)

    def run():
        _decode_paged_kernel[grid](*args, **cfg)

    return Launch(run, {k: cfg[k] for k in ("BLOCK_N", "BLOCK_H", "num_warps", "num_stages")})
