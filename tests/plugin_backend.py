"""A throw-away backend written only from the README's "Adding a backend": one module outside
``impls/``, registered through ``DECODE_BENCH_PLUGINS=tests.plugin_backend``. Its kernels are
plain torch (float32 scores and softmax, CPU or GPU), one pass on both layouts and split-K with
an LSE-weighted merge. ``tests/test_plugin.py`` runs the whole conformance suite and the harness
on it with no change anywhere else.
"""

import time

import torch

from impls.registry import Backend, Capabilities, Impl, Launch
from specs.problem import ProblemError

BACKEND = Backend(name="plugin-torch", summary="float32 torch decode attention, registered from outside",
                  requires=("torch",), cpu_mode="torch", shown_config=("num_splits",))
CAPS = Capabilities(frozenset({"dense", "paged"}))
TUNE_SPLITS = (1, 2, 4)  # what the ``tune`` option tries


def _rows(inputs, b: int, start: int, end: int):
    """K, V rows [start, end) of sequence b, [n, Hkv, D], through the layout."""
    t = torch.arange(start, end, device=inputs.device)
    if inputs.problem.layout == "dense":
        return inputs.k[b, t], inputs.v[b, t]
    ps = inputs.problem.page_size
    pages = inputs.block_table[b, t // ps].long()
    return inputs.k[pages, t % ps], inputs.v[pages, t % ps]


def _attend(inputs, b: int, start: int, end: int):
    """(out [Hq, D], lse [Hq]) of sequence b over tokens [start, end), float32."""
    p = inputs.problem
    k, v = _rows(inputs, b, start, end)
    heads = torch.arange(p.num_q_heads, device=inputs.device) // p.group_size
    s = torch.einsum("hd,nhd->hn", inputs.q[b].float(), k.float()[:, heads]) * p.scale
    lse = torch.logsumexp(s, dim=-1)
    return torch.einsum("hn,nhd->hd", torch.exp(s - lse[:, None]), v.float()[:, heads]), lse


def prepare_one_pass(inputs, out, lse) -> Launch:
    p = inputs.problem

    def run():
        for b, n in enumerate(p.seq_lens):
            o, l = _attend(inputs, b, 0, n)
            out[b], lse[b] = o.to(out.dtype), l

    return Launch(run)


def prepare_split_k(inputs, out, lse, num_splits: int | None = None, tune: bool = False) -> Launch:
    """``tune``: an autotuner in miniature, timing each of TUNE_SPLITS and keeping the fastest
    (reported as ``tuning_s``, apart from the first call)."""
    p = inputs.problem
    if tune and num_splits is None:
        start = time.perf_counter()
        timed = {}
        for n in TUNE_SPLITS:
            begin = time.perf_counter()
            prepare_split_k(inputs, out, lse, n).run()
            timed[n] = time.perf_counter() - begin
        launch = prepare_split_k(inputs, out, lse, min(timed, key=timed.get))
        launch.tuning_s = time.perf_counter() - start
        return launch
    splits = 2 if num_splits is None else num_splits
    if isinstance(splits, bool) or not isinstance(splits, int) or splits < 1:
        raise ProblemError(f"num_splits={num_splits!r}: must be a positive integer")
    per_split = -(-p.max_seq_len // splits)

    def run():
        for b, n in enumerate(p.seq_lens):
            parts = [_attend(inputs, b, lo, min(lo + per_split, n)) for lo in range(0, n, per_split)]
            lses = torch.stack([part_lse for _, part_lse in parts])  # [splits, Hq]
            total = torch.logsumexp(lses, dim=0)
            weights = torch.exp(lses - total)[..., None]  # each split's share of the softmax
            out[b] = (torch.stack([o for o, _ in parts]) * weights).sum(0).to(out.dtype)
            lse[b] = total

    return Launch(run, {"num_splits": splits})


IMPLS = [
    Impl(BACKEND, "one-pass", "tests.plugin_backend", CAPS, entry="prepare_one_pass",
         summary="per sequence: gather K/V rows through the layout, float32 softmax"),
    Impl(BACKEND, "split-k", "tests.plugin_backend", CAPS, entry="prepare_split_k",
         options=("num_splits", "tune"), summary="num_splits token ranges merged by their LSE"),
]
