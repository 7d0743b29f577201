"""Triton dense decode: one pass over a dense KV cache, online softmax.

Algorithm: grid (batch, num_kv_heads); each program streams its sequence's K/V rows in
``BLOCK_N``-token tiles once, for all query heads of its GQA group at once (``_common.attend``),
and writes the final ``out`` and ``lse``. No workspace, no second kernel.
Expected bottleneck: HBM bandwidth when batch x num_kv_heads fills the GPU; at small batch the
grid is too small (8 programs at batch 1 for Llama-3-8B) and split-K is the answer.
"""

import triton
import triton.language as tl

from impls.registry import Launch
from impls.triton._common import LOG2E, attend, pick_launch_config, store_group


# runtime ints that vary per problem are not specialised (fewer recompiles, same code)
@triton.jit(do_not_specialize=["group"])
def _decode_dense_kernel(
    q_ptr, k_ptr, v_ptr, seq_lens_ptr, out_ptr, lse_ptr,
    stride_qb, stride_qh, stride_kb, stride_kt, stride_kh, stride_ob, stride_oh, stride_lb,
    group, qk_scale,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr, BLOCK_H: tl.constexpr,
    BLOCK_N: tl.constexpr, UPCAST_DOT: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_kvh = tl.program_id(1)
    seq_len = tl.load(seq_lens_ptr + pid_b)
    # the dense layout needs no block table: seq_lens_ptr stands in, never read as one
    out, lse = attend(q_ptr, k_ptr, v_ptr, seq_lens_ptr, pid_b, pid_kvh, 0, seq_len, group,
                      stride_qb, stride_qh, stride_kb, stride_kt, stride_kh, 0, 1, qk_scale,
                      HEAD_DIM, HEAD_DIM_PAD, BLOCK_H, BLOCK_N, False, UPCAST_DOT)
    head0 = pid_kvh * group
    store_group(out_ptr + pid_b * stride_ob + head0 * stride_oh, lse_ptr + pid_b * stride_lb + head0,
                out, lse, stride_oh, 1, group, BLOCK_H, HEAD_DIM, HEAD_DIM_PAD)


def prepare(inputs, out, lse) -> Launch:
    p = inputs.problem
    cfg = pick_launch_config(p)
    q, k, v = inputs.q, inputs.k, inputs.v
    grid = (p.batch, p.num_kv_heads)
    args = (q, k, v, inputs.seq_lens, out, lse,
            q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2),
            out.stride(0), out.stride(1), lse.stride(0),
            p.group_size, p.scale * LOG2E)

    def run():
        _decode_dense_kernel[grid](*args, **cfg)

    return Launch(run, {k: cfg[k] for k in ("BLOCK_N", "BLOCK_H", "num_warps", "num_stages")})
