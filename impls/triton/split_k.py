"""Triton split-K decode (flash-decoding), on the dense or the paged layout.

Algorithm: stage 1, grid (batch, num_kv_heads, num_splits): split ``pid_s`` of a sequence attends
over tokens [pid_s * tokens_per_split, (pid_s + 1) * tokens_per_split) for its GQA group and
writes the partial output (normalised, float32) and its LSE to a workspace; an empty split (a
short sequence in a ragged batch, or more splits than tiles) writes LSE = -inf. Stage 2, grid
(batch, num_q_heads): the combine kernel merges the splits, out = sum_s exp(lse_s - lse) * out_s
with lse = log(sum_s exp(lse_s)), looping over the splits in blocks so any count works.
Why: at batch 1 the one-pass grid has num_kv_heads programs for 100+ SMs; splitting the sequence
fills the GPU. The cost is the workspace round trip (num_splits x Hq x D floats per sequence, tiny
next to the cache) and a second launch.
Expected bottleneck: HBM bandwidth once batch x num_kv_heads x num_splits covers the SMs a few
times; launch and combine overhead at short sequences.
"""

import triton
import triton.language as tl

from impls import common
from impls.common import LOG2E, SplitPolicy, cache_args, new_partials
from impls.registry import Launch
from impls.triton._common import REPORTED, attend, pick_launch_config, store_group

# One wave of programs over the SMs (results/nvidia-h200/sweeps/2026-11-21-triton.log).
SPLITS = SplitPolicy(waves=1)
COMBINE_BLOCK_S = 32  # partials merged per step of the combine loop (any split count works)


# runtime ints that vary per problem are not specialised (fewer recompiles, same code)
@triton.jit(do_not_specialize=["page_size", "group_size", "tokens_per_split"])
def split_kernel(
    q_ptr, k_ptr, v_ptr, seq_lens_ptr, block_table_ptr, part_out_ptr, part_lse_ptr,
    stride_qb, stride_qh, stride_kp, stride_kt, stride_kh, stride_btb,
    stride_pob, stride_poh, stride_pos, stride_plb, stride_plh,
    page_size, group_size, qk_scale, tokens_per_split,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr, BLOCK_H: tl.constexpr,
    BLOCK_N: tl.constexpr, IS_PAGED: tl.constexpr, UPCAST_DOT: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_kvh = tl.program_id(1)
    pid_s = tl.program_id(2)
    seq_len = tl.load(seq_lens_ptr + pid_b)
    start = pid_s * tokens_per_split
    end = tl.minimum(start + tokens_per_split, seq_len)  # empty when start >= seq_len
    out, lse = attend(q_ptr, k_ptr, v_ptr, block_table_ptr, pid_b, pid_kvh, start, end,
                      group_size, stride_qb, stride_qh, stride_kp, stride_kt, stride_kh,
                      stride_btb, page_size, qk_scale, HEAD_DIM, HEAD_DIM_PAD, BLOCK_H, BLOCK_N,
                      IS_PAGED, UPCAST_DOT)
    head0 = pid_kvh * group_size
    store_group(part_out_ptr + pid_b * stride_pob + head0 * stride_poh + pid_s * stride_pos,
                part_lse_ptr + pid_b * stride_plb + head0 * stride_plh + pid_s,
                out, lse, stride_poh, stride_plh, group_size, BLOCK_H, HEAD_DIM, HEAD_DIM_PAD)


@triton.jit(do_not_specialize=["num_splits"])
def combine_kernel(
    part_out_ptr, part_lse_ptr, out_ptr, lse_ptr,
    stride_pob, stride_poh, stride_pos, stride_plb, stride_plh, stride_ob, stride_oh, stride_lb,
    num_splits,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr, BLOCK_S: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_h = tl.program_id(1)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_DIM_PAD)
    mask_d = offs_d < HEAD_DIM
    lse_base = part_lse_ptr + pid_b * stride_plb + pid_h * stride_plh
    out_base = part_out_ptr + pid_b * stride_pob + pid_h * stride_poh
    # pass 1: the largest partial LSE (finite: split 0 always holds token 0)
    lse_max = tl.full([BLOCK_S], float("-inf"), tl.float32)
    for s0 in range(0, num_splits, BLOCK_S):
        lse_s = tl.load(lse_base + s0 + offs_s, mask=s0 + offs_s < num_splits, other=float("-inf"))
        lse_max = tl.maximum(lse_max, lse_s)
    m = tl.max(lse_max, 0)
    # pass 2: weights exp(lse_s - m) (empty splits: exp(-inf) = 0), weighted sum of partials
    acc = tl.zeros([HEAD_DIM_PAD], tl.float32)
    w_sum = tl.zeros([BLOCK_S], tl.float32)
    for s0 in range(0, num_splits, BLOCK_S):
        mask_s = s0 + offs_s < num_splits
        w = tl.exp(tl.load(lse_base + s0 + offs_s, mask=mask_s, other=float("-inf")) - m)
        part = tl.load(out_base + (s0 + offs_s)[:, None] * stride_pos + offs_d[None, :],
                       mask=mask_s[:, None] & mask_d[None, :], other=0.0)
        acc += tl.sum(part * w[:, None], 0)
        w_sum += w
    total = tl.sum(w_sum, 0)
    tl.store(out_ptr + pid_b * stride_ob + pid_h * stride_oh + offs_d,
             (acc / total).to(out_ptr.dtype.element_ty), mask=mask_d)
    tl.store(lse_ptr + pid_b * stride_lb + pid_h, m + tl.log(total))


def prepare(inputs, out, lse, num_splits: int | None = None, config: dict | None = None) -> Launch:
    p = inputs.problem
    num_splits = SPLITS.resolve(num_splits, p, inputs.device, p.batch * p.num_kv_heads)
    cfg = pick_launch_config(p, config)
    tokens_per_split = common.tokens_per_split(p, num_splits, cfg["BLOCK_N"])
    paged = p.layout == "paged"
    q, k, v = inputs.q, inputs.k, inputs.v
    table, stride_btb, page_size = cache_args(inputs)
    part_out, part_lse = new_partials(p, num_splits, q.device)
    part_strides = (part_out.stride(0), part_out.stride(1), part_out.stride(2),
                    part_lse.stride(0), part_lse.stride(1))
    split_args = (q, k, v, inputs.seq_lens, table, part_out, part_lse,
                  q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2), stride_btb,
                  *part_strides, page_size, p.group_size, p.scale * LOG2E, tokens_per_split)
    combine_args = (part_out, part_lse, out, lse, *part_strides, out.stride(0), out.stride(1),
                    lse.stride(0), num_splits)
    split_grid = (p.batch, p.num_kv_heads, num_splits)
    combine_grid = (p.batch, p.num_q_heads)
    combine_cfg = dict(HEAD_DIM=cfg["HEAD_DIM"], HEAD_DIM_PAD=cfg["HEAD_DIM_PAD"],
                       BLOCK_S=min(COMBINE_BLOCK_S, triton.next_power_of_2(num_splits)),
                       num_warps=cfg["num_warps"])

    def run():
        split_kernel[split_grid](*split_args, IS_PAGED=paged, **cfg)
        combine_kernel[combine_grid](*combine_args, **combine_cfg)

    return Launch(run, {"num_splits": num_splits, "tokens_per_split": tokens_per_split,
                        **{key: cfg[key] for key in REPORTED}})
