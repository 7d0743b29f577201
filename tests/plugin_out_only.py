"""An outside kernel of the kind production serving code ships (vLLM's decode kernels): it writes
``out`` only, no LSE, serves one variant (split-K on the paged layout) and states its limits:
head_dim >= 64, GQA groups of at most 8 query heads, at most 16 splits, and a precondition only
its launcher checks (page sizes up to 128), raised as ``Unsupported`` in ``prepare``. Registered
through ``DECODE_BENCH_PLUGINS=tests.plugin_out_only``; ``tests/test_plugin.py`` runs the whole
conformance suite and the harness on it.
"""

import torch

from impls.common import check_num_splits
from impls.registry import Backend, Capabilities, Impl, Launch, Unsupported

BACKEND = Backend(name="plugin-out-only", summary="split-K paged decode writing out only (no LSE)",
                  requires=("torch",), cpu_mode="torch", shown_config=("num_splits",))
CAPS = Capabilities(frozenset({"paged"}), min_head_dim=64, max_group_size=8, max_splits=16,
                    note="the limits of the kernel this plugin stands for")
MAX_PAGE_SIZE = 128


def _attend(inputs, b: int, start: int, end: int):
    """(unnormalised out [Hq, D], row max [Hq], row sum [Hq]) of sequence b over [start, end)."""
    p = inputs.problem
    t = torch.arange(start, end, device=inputs.device)
    pages = inputs.block_table[b, t // p.page_size].long()
    k, v = inputs.k[pages, t % p.page_size], inputs.v[pages, t % p.page_size]
    heads = torch.arange(p.num_q_heads, device=inputs.device) // p.group_size
    s = torch.einsum("hd,nhd->hn", inputs.q[b].float(), k.float()[:, heads]) * p.scale
    m = s.max(dim=-1).values
    e = torch.exp(s - m[:, None])
    return torch.einsum("hn,nhd->hd", e, v.float()[:, heads]), m, e.sum(-1)


def prepare(inputs, out, lse, num_splits: int | None = None) -> Launch:
    p = inputs.problem
    if p.page_size > MAX_PAGE_SIZE:
        raise Unsupported(f"page_size {p.page_size} (this kernel takes pages of at most {MAX_PAGE_SIZE})")
    splits = 2 if num_splits is None else num_splits
    check_num_splits(splits)
    per_split = -(-p.max_seq_len // splits)

    def run():  # lse is never written: the declaration says so
        for b, n in enumerate(p.seq_lens):
            parts = [_attend(inputs, b, lo, min(lo + per_split, n)) for lo in range(0, n, per_split)]
            m = torch.stack([pm for _, pm, _ in parts]).max(0).values
            scale = [torch.exp(pm - m) for _, pm, _ in parts]
            acc = sum(o * c[:, None] for (o, _, _), c in zip(parts, scale))
            total = sum(ps * c for (_, _, ps), c in zip(parts, scale))
            out[b] = (acc / total[:, None]).to(out.dtype)

    return Launch(run, {"num_splits": splits})


IMPLS = [Impl(BACKEND, "split-k", "tests.plugin_out_only", CAPS, options=("num_splits",),
              returns_lse=False, summary="num_splits token ranges, rescaled by their maxima")]
