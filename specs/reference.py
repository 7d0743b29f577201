"""The oracle: decode attention in float64, independent of every implementation.

It reads only the attended rows of each sequence (its first ``seq_lens[b]``, or a window's
last ones), each query token masked to its own causal span (``DecodeProblem.query_span``),
through the layout
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
    out: torch.Tensor  # float64 [batch * q_len, num_q_heads, head_dim]
    lse: torch.Tensor  # float64 [batch * q_len, num_q_heads]
    v_weight: torch.Tensor  # float64 [batch * q_len, num_q_heads, head_dim]: sum_t p_t |v_t[d]|
    # float64 [batch * q_len, num_q_heads, head_dim]: sum of |v_t[d]| / l over the tokens whose
    # unnormalised probability exp(s_t - max s) is below the dtype's smallest normal number, with
    # l = sum_t exp(s_t - max s): only these can round absolutely in a kernel (relative to a
    # running or per-split max a probability is no smaller), by <= half the subnormal spacing,
    # then rescaled by <= 1
    v_subnormal: torch.Tensor
    # float64 [batch * q_len, num_q_heads]: the largest |score| (capped, where soft-capped) over
    # the tokens each row attends: the scale of a soft cap's tanh error (specs.tolerance)
    s_absmax: torch.Tensor | None = None


def _chunks(first: int, length: int, width: int):
    step = max(1, CHUNK_VALUES // width)
    for start in range(first, length, step):
        yield start, min(length, start + step)


def reference(inputs: DecodeInputs) -> Reference:
    p = inputs.problem
    Hq, Hkv, G, D, n = p.num_q_heads, p.num_kv_heads, p.group_size, p.head_dim, p.q_len
    dev = inputs.q.device
    out = torch.empty(p.q_rows, Hq, D, dtype=torch.float64, device=dev)
    lse = torch.empty(p.q_rows, Hq, dtype=torch.float64, device=dev)
    v_weight = torch.empty_like(out)
    v_subnormal = torch.empty_like(out)
    s_absmax = torch.empty_like(lse)
    tiny = torch.finfo(inputs.q.dtype).tiny  # the dtype's smallest normal number
    width = max(Hkv * D, Hq * n)  # values a token adds to K's chunk or to the scores' (MQA: Hq > D)
    cap = p.softcap

    def by_kv_head(x):  # [n, Hq, ...] -> [Hkv, n * G, ...]: row j = i * G + g of each KV head
        return x.view(n, Hkv, G, *x.shape[2:]).transpose(0, 1).reshape(Hkv, n * G, *x.shape[2:])

    def by_row(x):  # the inverse: [Hkv, n * G, ...] -> [n, Hq, ...]
        return x.view(Hkv, n, G, *x.shape[2:]).transpose(0, 1).reshape(n, Hq, *x.shape[2:])

    for b, length in enumerate(p.seq_lens):
        rows = slice(b * n, (b + 1) * n)
        q = by_kv_head(inputs.q[rows].double())  # [Hkv, n * G, D]
        spans = torch.tensor([p.query_span(b, i) for i in range(n)], device=dev)
        firsts, ends = (spans[:, j].repeat_interleave(G) for j in (0, 1))  # per row of n * G

        def scores(start, stop):
            k, v = inputs.values64(*inputs.rows(b, start, stop))  # [l, Hkv, D], dequantised
            s = torch.einsum("hrd,lhd->hrl", q, k) * p.scale
            s = cap * torch.tanh(s / cap) if cap is not None else s
            t = torch.arange(start, stop, device=dev)
            seen = (t[None, :] >= firsts[:, None]) & (t[None, :] < ends[:, None])  # [n * G, l]
            return s.masked_fill(~seen, -torch.inf), v, seen

        # pass 1: the largest score and the normaliser l = sum exp(s - max), per query row (a
        # chunk a row sees nothing of leaves both as they were)
        top = torch.full((Hkv, n * G), -torch.inf, dtype=torch.float64, device=dev)
        total = torch.zeros((Hkv, n * G), dtype=torch.float64, device=dev)
        absmax = torch.zeros((Hkv, n * G), dtype=torch.float64, device=dev)
        for start, stop in _chunks(p.window_starts[b], length, width):
            s, _, seen = scores(start, stop)
            absmax = torch.maximum(absmax, torch.where(seen, s.abs(), 0.0).amax(-1))
            new_top = torch.maximum(top, s.amax(-1))
            shift = torch.where(torch.isfinite(new_top), new_top, 0.0)
            total = total * torch.exp(top - shift) + torch.exp(s - shift[..., None]).sum(-1)
            top = new_top
        lse64 = top + torch.log(total)
        # pass 2: probabilities against V
        acc, acc_abs, acc_sub = (torch.zeros((Hkv, n * G, D), dtype=torch.float64, device=dev)
                                 for _ in range(3))
        for start, stop in _chunks(p.window_starts[b], length, width):
            s, v, seen = scores(start, stop)
            p64 = torch.exp(s - lse64[..., None])
            acc += torch.einsum("hrl,lhd->hrd", p64, v)
            acc_abs += torch.einsum("hrl,lhd->hrd", p64, v.abs())
            subnormal = (seen & (torch.exp(s - top[..., None]) < tiny)) / total[..., None]
            acc_sub += torch.einsum("hrl,lhd->hrd", subnormal.double(), v.abs())
        out[rows] = by_row(acc)
        v_weight[rows] = by_row(acc_abs)
        v_subnormal[rows] = by_row(acc_sub)
        lse[rows] = by_row(lse64)
        s_absmax[rows] = by_row(absmax)
    return Reference(out, lse, v_weight, v_subnormal, s_absmax)
