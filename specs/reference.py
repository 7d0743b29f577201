"""The oracle: decode attention in float64, independent of every implementation.

It reads only the logical cache's first ``seq_lens[b]`` rows of each sequence (never the
poison; a paged input set kept without its logical copy gives those rows through its table) and
runs on the inputs' device (the GPU when there is one).

Beside the result it returns, per output element, the softmax-weighted magnitude of V,
``sum_t p_t |v_t[d]|``: the scale of the roundings any kernel at the input precision must make,
and the magnitude of V over the tokens whose probability is subnormal in the input dtype, where
that rounding is absolute, not relative (``specs.tolerance`` turns both into the tolerance).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specs.inputs import DecodeInputs


@dataclass
class Reference:
    out: torch.Tensor  # float64 [batch, num_q_heads, head_dim]
    lse: torch.Tensor  # float64 [batch, num_q_heads]
    v_weight: torch.Tensor  # float64 [batch, num_q_heads, head_dim]: sum_t p_t |v_t[d]|
    # float64 [batch, num_q_heads, head_dim]: sum of |v_t[d]| / l over the tokens whose
    # unnormalised probability exp(s_t - max s) is below the dtype's smallest normal number, with
    # l = sum_t exp(s_t - max s): only these can round absolutely in a kernel (relative to a
    # running or per-split max a probability is no smaller), by <= half the subnormal spacing,
    # then rescaled by <= 1
    v_subnormal: torch.Tensor


def reference(inputs: DecodeInputs) -> Reference:
    p = inputs.problem
    B, Hq, Hkv, G, D = p.batch, p.num_q_heads, p.num_kv_heads, p.group_size, p.head_dim
    dev = inputs.q.device
    out = torch.empty(B, Hq, D, dtype=torch.float64, device=dev)
    lse = torch.empty(B, Hq, dtype=torch.float64, device=dev)
    v_weight = torch.empty_like(out)
    v_subnormal = torch.empty_like(out)
    tiny = torch.finfo(inputs.q.dtype).tiny  # the dtype's smallest normal number
    for b, length in enumerate(p.seq_lens):
        q = inputs.q[b].view(Hkv, G, D)  # query head h = kv_head * G + g
        if inputs.k_logical is not None:
            k = inputs.k_logical[b, :length]  # [L, Hkv, D]
            v = inputs.v_logical[b, :length]
        else:  # a paged set kept without its logical copy: the owned rows through the table
            t = torch.arange(length, device=dev)
            pages = inputs.block_table[b, t // p.page_size].long()
            k, v = inputs.k[pages, t % p.page_size], inputs.v[pages, t % p.page_size]

        s64 = torch.einsum("hgd,lhd->hgl", q.double(), k.double()) * p.scale
        lse64 = torch.logsumexp(s64, dim=-1)
        p64 = torch.exp(s64 - lse64[..., None])
        out[b] = torch.einsum("hgl,lhd->hgd", p64, v.double()).reshape(Hq, D)
        v_weight[b] = torch.einsum("hgl,lhd->hgd", p64, v.double().abs()).reshape(Hq, D)
        unnormalised = torch.exp(s64 - s64.amax(-1, keepdim=True))
        weight = (unnormalised < tiny) / unnormalised.sum(-1, keepdim=True)
        v_subnormal[b] = torch.einsum("hgl,lhd->hgd", weight, v.double().abs()).reshape(Hq, D)
        lse[b] = lse64.reshape(Hq)
    return Reference(out, lse, v_weight, v_subnormal)
