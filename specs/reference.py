"""The oracle: decode attention in float64, independent of every implementation.

It reads only the attended rows of each sequence (its first ``seq_lens[b]``, or a window's
last ones), through the layout
(``DecodeInputs.rows``: never the poison; an fp8 cache's values times their scales, exactly),
a chunk of rows at a time (``CHUNK_VALUES``), so its memory stays bounded whatever the
sequence's length: a first pass finds each head's largest score and log-sum-exp, a second sums
the probabilities against V. It runs on the inputs' device (the GPU when there is one).

Beside the result it returns, per output element, the softmax-weighted magnitude of V,
``sum_t p_t |v_t[d]|``: the scale of the roundings any kernel at the input precision must make,
and the magnitude of V over the tokens whose probability is subnormal in the input dtype, where
that rounding is absolute, not relative (``specs.tolerance`` turns both into the tolerance).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specs.inputs import DecodeInputs

CHUNK_VALUES = 1 << 23  # K (or V) values of one chunk: 64 MB in float64, a few such live at once


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


def _chunks(first: int, length: int, width: int):
    step = max(1, CHUNK_VALUES // width)
    for start in range(first, length, step):
        yield start, min(length, start + step)


def reference(inputs: DecodeInputs) -> Reference:
    p = inputs.problem
    B, Hq, Hkv, G, D = p.batch, p.num_q_heads, p.num_kv_heads, p.group_size, p.head_dim
    dev = inputs.q.device
    out = torch.empty(B, Hq, D, dtype=torch.float64, device=dev)
    lse = torch.empty(B, Hq, dtype=torch.float64, device=dev)
    v_weight = torch.empty_like(out)
    v_subnormal = torch.empty_like(out)
    tiny = torch.finfo(inputs.q.dtype).tiny  # the dtype's smallest normal number
    width = max(Hkv * D, Hq)  # values a token adds to K's chunk or to the scores' (MQA: Hq > D)
    cap = p.softcap
    for b, (first, length) in enumerate(zip(p.window_starts, p.seq_lens)):
        q = inputs.q[b].view(Hkv, G, D).double()  # query head h = kv_head * G + g

        def scores(start, stop):
            k, v = inputs.values64(*inputs.rows(b, start, stop))  # [n, Hkv, D], dequantised
            s = torch.einsum("hgd,lhd->hgl", q, k) * p.scale
            return (cap * torch.tanh(s / cap) if cap is not None else s), v

        # pass 1: the largest score and the normaliser l = sum exp(s - max), per query head
        top = torch.full((Hkv, G), -torch.inf, dtype=torch.float64, device=dev)
        total = torch.zeros((Hkv, G), dtype=torch.float64, device=dev)
        for start, stop in _chunks(first, length, width):
            s, _ = scores(start, stop)
            new_top = torch.maximum(top, s.amax(-1))
            total = total * torch.exp(top - new_top) + torch.exp(s - new_top[..., None]).sum(-1)
            top = new_top
        lse64 = top + torch.log(total)
        # pass 2: probabilities against V
        acc, acc_abs, acc_sub = (torch.zeros((Hkv, G, D), dtype=torch.float64, device=dev)
                                 for _ in range(3))
        for start, stop in _chunks(first, length, width):
            s, v = scores(start, stop)
            p64 = torch.exp(s - lse64[..., None])
            acc += torch.einsum("hgl,lhd->hgd", p64, v)
            acc_abs += torch.einsum("hgl,lhd->hgd", p64, v.abs())
            subnormal = (torch.exp(s - top[..., None]) < tiny) / total[..., None]
            acc_sub += torch.einsum("hgl,lhd->hgd", subnormal.double(), v.abs())
        out[b] = acc.reshape(Hq, D)
        v_weight[b] = acc_abs.reshape(Hq, D)
        v_subnormal[b] = acc_sub.reshape(Hq, D)
        lse[b] = lse64.reshape(Hq)
    return Reference(out, lse, v_weight, v_subnormal)
