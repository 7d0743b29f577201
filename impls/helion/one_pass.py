"""Helion one-pass decode, on the dense or the paged layout (``IS_PAGED``).

Algorithm: ``hl.tile`` over (batch, num_kv_heads, group_size) with block sizes [1, 1, BLOCK_H]
(one program per sequence and KV head); each program streams its sequence's K/V rows in
``BLOCK_N``-token tiles once, for all query heads of its GQA group at once
(scores masked to -inf past the length), and writes the final ``out`` and ``lse``. Paged: each
tile's rows are gathered through the block table, one table entry per token, so any page size
works. Helion writes the Triton kernel and its launcher; ``tune`` runs Helion's autotuner on the
inputs instead of the fixed config of ``pick_launch_config``.
Expected bottleneck: HBM bandwidth when batch x num_kv_heads fills the GPU; at small batch the
grid is too small and split-K is the answer. Paged: a table load per token and short runs.
"""

import helion
import helion.language as hl
import torch

from impls.common import LN2, LOG2E, require_e4m3_hardware
from impls.helion import _common
from impls.registry import Launch


@helion.kernel(**_common.SETTINGS)
def decode_kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, seq_lens: torch.Tensor,
                  block_table: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
                  qk_scale: float, k_scale: torch.Tensor, v_scale: torch.Tensor,
                  IS_PAGED: hl.constexpr, UPCAST_DOT: hl.constexpr) -> None:
    """q, out [batch, Hq, D]; k, v dense [batch, rows, Hkv, D] or pool [pages, page_size, Hkv,
    D]; lse [batch, Hq] float32 natural log; block_table [batch, pages per sequence] (paged)."""
    batch, num_q_heads, head_dim = q.shape
    head_dim = hl.specialize(head_dim)
    num_kv_heads = k.size(2)
    group_size = num_q_heads // num_kv_heads
    page_size = k.size(1)
    k_rows = k.view(-1, num_kv_heads, head_dim)  # paged: one row per token of the pool
    v_rows = v.view(-1, num_kv_heads, head_dim)
    q_grouped = q.view(batch, num_kv_heads, group_size, head_dim)
    out_grouped = out.view(batch, num_kv_heads, group_size, head_dim)
    lse_grouped = lse.view(batch, num_kv_heads, group_size)
    for tile_b, tile_kvh, tile_h in hl.tile([batch, num_kv_heads, group_size],
                                            block_size=[1, 1, None]):
        pid_b = tile_b.begin
        pid_kvh = tile_kvh.begin
        q_tile = q_grouped[pid_b, pid_kvh, tile_h, :]
        m_i = hl.full([tile_h], float("-inf"), dtype=torch.float32)
        l_i = hl.zeros([tile_h], dtype=torch.float32)
        acc = hl.zeros([tile_h, head_dim], dtype=torch.float32)
        score_scale = qk_scale * k_scale[pid_kvh]  # the cache's scales: see _common.kv_scales
        seq_len = seq_lens[pid_b]
        for tile_n in hl.tile(seq_len):  # loads indexed by tile_n are masked to [0, seq_len)
            if IS_PAGED:  # token t: row t % page_size of page block_table[pid_b, t // page_size]
                rows = block_table[pid_b, tile_n.index // page_size] * page_size \
                    + tile_n.index % page_size
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
            s = torch.where(tile_n.index[None, :] < seq_len, s * score_scale, float("-inf"))
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
        out_grouped[pid_b, pid_kvh, tile_h, :] = (acc / l_i[:, None]).to(out.dtype)
        lse_grouped[pid_b, pid_kvh, tile_h] = (m_i + torch.log2(l_i)) * LN2


def kernel_args(inputs, out, lse) -> tuple:
    """``decode_kernel``'s arguments: the dense layout reads no table, so ``seq_lens`` as a
    [B, 1] view stands in."""
    p = inputs.problem
    paged = p.layout == "paged"
    table = inputs.block_table if paged else inputs.seq_lens.view(-1, 1)
    upcast = _common.interpreting() and p.dtype == "bfloat16"
    return (inputs.q, inputs.k, inputs.v, inputs.seq_lens, table, out, lse, p.scale * LOG2E,
            *_common.kv_scales(inputs), paged, upcast)


def prepare(inputs, out, lse, config: dict | None = None, tune: bool = False) -> Launch:
    require_e4m3_hardware(inputs)  # Helion writes Triton
    if _common.interpreting():
        _common.interpreter_math()
    args = kernel_args(inputs, out, lse)
    bound, reported, tuning_s = _common.bind(decode_kernel, args, inputs.problem, config, tune)

    def run():
        bound(*args)

    return Launch(run, reported, tuning_s=tuning_s)
