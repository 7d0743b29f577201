"""Triton split-K decode (flash-decoding), on the dense or the paged layout.

Algorithm: stage 1, grid (batch, num_kv_heads, num_splits): split ``s`` of a sequence attends
over tokens [s * chunk, (s + 1) * chunk) for its GQA group and writes the partial output
(normalised, float32) and its LSE to a workspace; an empty split (a short sequence in a ragged
batch, or more splits than tiles) writes LSE = -inf. Stage 2, grid (batch, num_q_heads): the
combine kernel merges the splits, out = sum_s exp(lse_s - lse) * out_s with
lse = log(sum_s exp(lse_s)), looping over the splits in blocks so any count works.
Why: at batch 1 the one-pass grid has num_kv_heads programs for 100+ SMs; splitting the sequence
fills the GPU. The cost is the workspace round trip (num_splits x Hq x D floats per sequence, tiny
next to the cache) and a second launch.
Expected bottleneck: HBM bandwidth once batch x num_kv_heads x num_splits covers the SMs a few
times; launch and combine overhead at short sequences.
"""

import triton
import triton.language as tl

import torch

from impls import heuristics
from impls.registry import Launch, sm_count
from impls.triton._common import LOG2E, attend, pick_launch_config, store_group

# Split-count heuristic (heuristics.pick_num_splits): enough programs for WAVES waves over the SMs, but no
# split shorter than MIN_TOKENS_PER_SPLIT, where the workspace write and the combine cost more
# than the extra parallelism saves; MAX_SPLITS bounds the workspace and the combine's tile.
WAVES = 1  # sweep (H200, 1 x 32k): 16-17 splits beat 33 (49 us vs 53 us)
MIN_TOKENS_PER_SPLIT = 256
MAX_SPLITS = 128
COMBINE_BLOCK_S = 32  # partials merged per step of the combine loop (any split count works)


# runtime ints that vary per problem are not specialised (fewer recompiles, same code)
@triton.jit(do_not_specialize=["page_size", "group", "chunk"])
def _split_kernel(
    q_ptr, k_ptr, v_ptr, seq_lens_ptr, block_table_ptr, part_out_ptr, part_lse_ptr,
    stride_qb, stride_qh, stride_k0, stride_k1, stride_kh, stride_btb,
    stride_pob, stride_poh, stride_pos, stride_plb, stride_plh,
    page_size, group, qk_scale, chunk,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr, BLOCK_H: tl.constexpr,
    BLOCK_N: tl.constexpr, IS_PAGED: tl.constexpr, UPCAST_DOT: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_kvh = tl.program_id(1)
    pid_s = tl.program_id(2)
    seq_len = tl.load(seq_lens_ptr + pid_b)
    start = pid_s * chunk
    end = tl.minimum(start + chunk, seq_len)  # empty when start >= seq_len
    out, lse = attend(q_ptr, k_ptr, v_ptr, block_table_ptr, pid_b, pid_kvh, start, end, group,
                      stride_qb, stride_qh, stride_k0, stride_k1, stride_kh, stride_btb, page_size,
                      qk_scale, HEAD_DIM, HEAD_DIM_PAD, BLOCK_H, BLOCK_N, IS_PAGED, UPCAST_DOT)
    head0 = pid_kvh * group
    store_group(part_out_ptr + pid_b * stride_pob + head0 * stride_poh + pid_s * stride_pos,
                part_lse_ptr + pid_b * stride_plb + head0 * stride_plh + pid_s,
                out, lse, stride_poh, stride_plh, group, BLOCK_H, HEAD_DIM, HEAD_DIM_PAD)


@triton.jit(do_not_specialize=["num_splits"])
def _combine_kernel(
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


def prepare(inputs, out, lse, num_splits: int | None = None) -> Launch:
    p = inputs.problem
    num_splits = heuristics.resolve_num_splits(
        num_splits, p, sm_count(inputs.device), p.batch * p.num_kv_heads, WAVES, MIN_TOKENS_PER_SPLIT,
        MAX_SPLITS)
    cfg = pick_launch_config(p)
    chunk = heuristics.tokens_per_split(p, num_splits, cfg["BLOCK_N"])
    paged = p.layout == "paged"
    q, k, v = inputs.q, inputs.k, inputs.v
    table = inputs.block_table if paged else inputs.seq_lens  # stand-in, never read as a table
    part_out = torch.empty(p.batch, p.num_q_heads, num_splits, p.head_dim, dtype=torch.float32,
                           device=q.device)
    part_lse = torch.empty(p.batch, p.num_q_heads, num_splits, dtype=torch.float32, device=q.device)
    part_strides = (part_out.stride(0), part_out.stride(1), part_out.stride(2),
                    part_lse.stride(0), part_lse.stride(1))
    split_args = (q, k, v, inputs.seq_lens, table, part_out, part_lse,
                  q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2),
                  table.stride(0) if paged else 0, *part_strides,
                  p.page_size if paged else 1, p.group_size, p.scale * LOG2E, chunk)
    combine_args = (part_out, part_lse, out, lse, *part_strides, out.stride(0), out.stride(1),
                    lse.stride(0), num_splits)
    split_grid = (p.batch, p.num_kv_heads, num_splits)
    combine_grid = (p.batch, p.num_q_heads)
    combine_cfg = dict(HEAD_DIM=cfg["HEAD_DIM"], HEAD_DIM_PAD=cfg["HEAD_DIM_PAD"],
                       BLOCK_S=min(COMBINE_BLOCK_S, triton.next_power_of_2(num_splits)),
                       num_warps=cfg["num_warps"])

    def run():
        _split_kernel[split_grid](*split_args, IS_PAGED=paged, **cfg)
        _combine_kernel[combine_grid](*combine_args, **combine_cfg)

    return Launch(run, {"num_splits": num_splits, "tokens_per_split": chunk,
                        **{k: cfg[k] for k in ("BLOCK_N", "BLOCK_H", "num_warps", "num_stages")}})
