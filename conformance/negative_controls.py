"""Negative controls: deliberately wrong decode kernels the conformance suite must reject.

Each is a small PyTorch program (runs on CPU and GPU) that reads the KV cache through the same
layout tensors a real kernel gets (dense cache, or pool + block table) and makes one classic
mistake. Each names the properties that must catch it (``caught_by``); the property tests run
them with a strict xfail, so a property that stops catching its control fails the suite. They are
``Impl``s like any backend's, kept out of the registry: nothing but this suite runs them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from impls.launch import Knob, Space
from impls.registry import Backend, Capabilities, Impl, Launch
from specs.problem import KV_DTYPES, MAX_Q_LEN

# every layout, and fp8 caches too (the controls read the values a cache stands for, _rows)
_BOTH = Capabilities(frozenset({"dense", "paged"}), kv_dtypes=frozenset(KV_DTYPES))
# the mask's axes and multi-token queries too: the controls whose mistake is in a window, a
# soft cap or the causal mask among query tokens
_MASKED = dataclasses.replace(_BOTH, windows=True, softcaps=True, max_q_len=MAX_Q_LEN)


def _rows(inputs, b: int, start: int, stop: int):
    """Sequence ``b``'s K and V rows as the values they stand for (an fp8 cache's times its
    scales, in float64; a 16-bit cache's as stored)."""
    k, v = inputs.rows(b, start, stop)
    return inputs.values64(k, v) if inputs.k_scale is not None else (k, v)


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, kv_head_of,
            score=None):
    """float32 attention of q [Hq, D] over k, v [n, Hkv, D]; query head h reads kv_head_of(h);
    ``score`` maps the products q.k to the scores (default: times ``scale``)."""
    heads = kv_head_of(torch.arange(q.shape[0], device=q.device))
    k = k.float()[:, heads]  # [n, Hq, D]
    v = v.float()[:, heads]
    dots = torch.einsum("hd,nhd->hn", q.float(), k)
    s = score(dots) if score is not None else dots * scale
    lse = torch.logsumexp(s, dim=-1)
    return torch.einsum("hn,nhd->hd", torch.exp(s - lse[:, None]), v), lse


def _per_sequence(inputs, out, lse, length_of, kv_head_of=None, first_of=None,
                  score=None, span=None) -> Launch:
    """A launch that attends sequence b's last query token over rows [first_of(b),
    length_of(b)) (default: its span in the spec), an earlier one i over the same range moved
    back by its distance from the last (the start clipped at 0), or query token i over
    ``span(b, i)`` when given; an empty range writes nothing. Scores are ``score(q.k)``
    (default: the spec's)."""
    p = inputs.problem
    n = p.q_len
    kv_head_of = kv_head_of or (lambda h: h // p.group_size)
    first_of = first_of or (lambda b: p.query_span(b)[0])
    span = span or (lambda b, i: (max(0, first_of(b) - (n - 1 - i)), length_of(b) - (n - 1 - i)))
    if score is None and p.softcap is not None:
        score = lambda dots: p.softcap * torch.tanh(dots * p.scale / p.softcap)  # noqa: E731

    def run():
        for b in range(p.batch):
            for i in range(n):
                first, end = span(b, i)
                if end > first:
                    k, v = _rows(inputs, b, first, end)
                    o, l = _attend(inputs.q[b * n + i], k, v, p.scale, kv_head_of, score)
                    out[b * n + i] = o.to(out.dtype)
                    lse[b * n + i] = l

    return Launch(run)


def plain_attention(inputs) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, lse) of the spec's attention in float32 torch, each query row over its own span,
    scores capped where the problem caps them: the controls' correct base, which the float64
    oracle must agree with (tests/test_mask.py, tests/test_query_tokens.py)."""
    p = inputs.problem
    out, lse = inputs.new_outputs()
    _per_sequence(inputs, out, lse, lambda b: p.seq_lens[b]).run()
    return out, lse


def tuned_tile_drops_tail(inputs, out, lse, config=None) -> Launch:
    """Right with its default launch; with a ``block_n`` from its search space (what a tuner
    would pick), attends whole tiles of that many tokens only, dropping each sequence's tail."""
    p = inputs.problem
    tile = (config or {}).get("block_n", 1)
    return _per_sequence(inputs, out, lse, lambda b: p.seq_lens[b] // tile * tile)


def noop(inputs, out, lse) -> Launch:
    """Launches nothing: every output element stays as the caller left it."""
    return Launch(lambda: None)


def skip_last_partial_page(inputs, out, lse) -> Launch:
    """Paged: attends over whole pages only, dropping the tokens of a partial last page."""
    p = inputs.problem
    if p.layout == "dense":  # no pages: computes the right thing, so paged != dense shows it
        return _per_sequence(inputs, out, lse, lambda b: p.seq_lens[b])
    return _per_sequence(inputs, out, lse, lambda b: p.seq_lens[b] // p.page_size * p.page_size)


def reads_past_length(inputs, out, lse) -> Launch:
    """Ignores seq_lens inside the last page / the dense buffer: reads the poisoned tail."""
    p = inputs.problem
    if p.layout == "paged":
        return _per_sequence(inputs, out, lse, lambda b: p.pages_for(p.seq_lens[b]) * p.page_size)
    return _per_sequence(inputs, out, lse, lambda b: inputs.k.shape[1])


def wrong_gqa_mapping(inputs, out, lse) -> Launch:
    """Query head h reads KV head h % num_kv_heads (interleaved) instead of h // group_size."""
    p = inputs.problem
    return _per_sequence(inputs, out, lse, lambda b: p.seq_lens[b],
                         kv_head_of=lambda h: h % p.num_kv_heads)


def swapped_head_scales(inputs, out, lse) -> Launch:
    """An fp8 cache with per-head scales: KV heads 0 and 1 dequantised with each other's scales
    (a scale indexed by the wrong head); right wherever that cannot happen."""
    p = inputs.problem
    if inputs.k_scale is not None and inputs.k_scale.numel() > 1:  # one scale: nothing to swap
        swap = torch.arange(p.num_kv_heads, device=inputs.device)
        swap[0], swap[1] = 1, 0
        inputs = dataclasses.replace(inputs, k_scale=inputs.k_scale[swap],
                                     v_scale=inputs.v_scale[swap])
    return _per_sequence(inputs, out, lse, lambda b: p.seq_lens[b])


def window_one_too_wide(inputs, out, lse) -> Launch:
    """A window that attends one token more than its last ``window`` (an off-by-one in the
    window's start); right where no window is set."""
    p = inputs.problem
    first = (lambda b: max(0, p.query_span(b)[0] - 1)) if p.window is not None else None
    return _per_sequence(inputs, out, lse, lambda b: p.seq_lens[b], first_of=first)


def causal_off_by_one(inputs, out, lse) -> Launch:
    """Query tokens of one sequence each also see the token after their own (a causal mask off
    by one); right where q_len is 1 (its one token sees the whole cache)."""
    p = inputs.problem

    def span(b, i):
        first, end = p.query_span(b, i)
        return first, min(end + 1, p.seq_lens[b])

    return _per_sequence(inputs, out, lse, None, span=span)


def softcap_before_scale(inputs, out, lse) -> Launch:
    """Soft-caps the raw products q.k, then scales: c * tanh(q.k / c) * sm_scale instead of
    c * tanh(q.k * sm_scale / c); right where no cap is set."""
    p = inputs.problem
    score = (lambda dots: p.softcap * torch.tanh(dots / p.softcap) * p.scale) \
        if p.softcap is not None else None
    return _per_sequence(inputs, out, lse, lambda b: p.seq_lens[b], score=score)


def first_length_for_all(inputs, out, lse) -> Launch:
    """Reads seq_lens[0] for every sequence (a missing batch stride), clipped to what exists."""
    p = inputs.problem
    return _per_sequence(inputs, out, lse, lambda b: min(p.seq_lens[0], p.seq_lens[b]))


def low_precision_accumulation(inputs, out, lse) -> Launch:
    """Online softmax whose running sum and accumulator are kept in bfloat16 (16-token tiles)."""
    p = inputs.problem
    tile = 16
    acc_dtype = torch.bfloat16

    def run():
        for b in range(p.batch):
            k, v = _rows(inputs, b, 0, p.seq_lens[b])
            heads = torch.arange(p.num_q_heads, device=inputs.device) // p.group_size
            s_all = torch.einsum("hd,nhd->hn", inputs.q[b].float(), k.float()[:, heads]) * p.scale
            m = s_all.max(dim=-1).values  # exact max: only the sums are low precision
            l_i = torch.zeros(p.num_q_heads, dtype=acc_dtype, device=inputs.device)
            acc = torch.zeros(p.num_q_heads, p.head_dim, dtype=acc_dtype, device=inputs.device)
            for start in range(0, p.seq_lens[b], tile):
                pr = torch.exp(s_all[:, start:start + tile] - m[:, None])
                vt = v.float()[start:start + tile][:, heads]
                l_i = (l_i.float() + pr.sum(-1)).to(acc_dtype)
                acc = (acc.float() + torch.einsum("hn,nhd->hd", pr, vt)).to(acc_dtype)
            out[b] = (acc.float() / l_i.float()[:, None]).to(out.dtype)
            lse[b] = m + torch.log(l_i.float())

    return Launch(run)


def unweighted_split_combine(inputs, out, lse, num_splits: int | None = None) -> Launch:
    """Split-K whose combine averages the partial outputs instead of weighting them by LSE."""
    p = inputs.problem
    splits = num_splits or 2

    def run():
        for b in range(p.batch):
            n = p.seq_lens[b]
            k, v = _rows(inputs, b, 0, n)
            bounds = torch.linspace(0, n, splits + 1).round().long().tolist()
            parts = [_attend(inputs.q[b], k[lo:hi], v[lo:hi], p.scale, lambda h: h // p.group_size)
                     for lo, hi in zip(bounds, bounds[1:]) if hi > lo]
            out[b] = torch.stack([o for o, _ in parts]).mean(0).to(out.dtype)
            lse[b] = torch.stack([l for _, l in parts]).logsumexp(0)

    return Launch(run)


def drop_last_chunk_of_longest(split_plan, seq_lens):
    """A planner bug: the longest sequence loses its last work item."""
    from impls import plan as planner

    longest = int(np.argmax(seq_lens))
    mine = np.flatnonzero(split_plan.items[:, 0] == longest)
    last = mine[np.argmax(split_plan.items[mine, 2])]
    return planner.SplitPlan(split_plan.chunk, np.delete(split_plan.items, last, axis=0),
                             split_plan.merge_seqs, split_plan.merge_indptr)


def planned_split_dropping_last_chunk(inputs, out, lse, num_splits: int | None = None) -> Launch:
    """Split-K over impls.plan's work items whose planner drops the longest sequence's last chunk."""
    from impls import plan as planner

    p = inputs.problem
    # 4 programs and 16-token granules: small CI problems are split too
    split_plan = drop_last_chunk_of_longest(
        planner.plan(p.seq_lens, p.num_kv_heads, 4, 16, num_splits=num_splits), p.seq_lens)

    def run():
        for b in range(p.batch):
            parts = []
            for _, start, end, _ in split_plan.items[split_plan.items[:, 0] == b]:
                k, v = _rows(inputs, b, 0, int(end))
                parts.append(_attend(inputs.q[b], k[int(start):], v[int(start):], p.scale,
                                     lambda h: h // p.group_size))
            if parts:  # a sequence left with no item is never written
                lses = torch.stack([part_lse for _, part_lse in parts])
                total = torch.logsumexp(lses, 0)
                weights = torch.exp(lses - total)[..., None]
                out[b] = (torch.stack([o for o, _ in parts]) * weights).sum(0).to(out.dtype)
                lse[b] = total

    return Launch(run)


def memoised(inputs, out, lse) -> Launch:
    """Computes on the first call per (q, out) pointer pair, then returns at once: the result
    of the first call replayed across the timed repetitions."""
    p = inputs.problem
    honest = _per_sequence(inputs, out, lse, lambda b: p.seq_lens[b])
    done: set[tuple[int, int]] = set()

    def run():
        key = (inputs.q.data_ptr(), out.data_ptr())
        if key not in done:
            done.add(key)
            honest.run()

    return Launch(run)


def first_call_only(inputs, out, lse) -> Launch:
    """Works on its first call and on no later one (a flag set on first use)."""
    p = inputs.problem
    honest = _per_sequence(inputs, out, lse, lambda b: p.seq_lens[b])
    calls = []

    def run():
        if not calls:
            honest.run()
        calls.append(True)

    return Launch(run)


def copy_memoised(inputs, out, lse) -> Launch:
    """Computes on the first call per q pointer, then copies that result into the outputs: a
    result replayed by pointer, the outputs written every time."""
    p = inputs.problem
    honest = _per_sequence(inputs, out, lse, lambda b: p.seq_lens[b])
    cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def run():
        key = inputs.q.data_ptr()
        if key in cache:
            out.copy_(cache[key][0])
            lse.copy_(cache[key][1])
        else:
            honest.run()
            cache[key] = (out.clone(), lse.clone())

    return Launch(run)


def poison_gated(inputs, out, lse) -> Launch:
    """Computes only when its output holds NaN (as a poisoned buffer does), else returns."""
    p = inputs.problem
    honest = _per_sequence(inputs, out, lse, lambda b: p.seq_lens[b])

    def run():
        if bool(torch.isnan(out).any()):
            honest.run()

    return Launch(run)


def capture_skipping(inputs, out, lse) -> Launch:
    """Computes on every plain call, records nothing when captured in a CUDA graph: its graph
    replays in no time."""
    p = inputs.problem
    honest = _per_sequence(inputs, out, lse, lambda b: p.seq_lens[b])

    def run():
        if not torch.cuda.is_current_stream_capturing():
            honest.run()

    return Launch(run)


@dataclass(frozen=True)
class Control:
    """A deliberately wrong implementation and the properties that must reject it."""

    name: str
    impl: Impl
    caught_by: tuple[str, ...]


def _control(name: str, entry: str, caught_by: tuple[str, ...], algorithm: str = "one-pass",
             options=(), caps: Capabilities = _BOTH, space: Space = Space()) -> Control:
    backend = Backend(name=f"control-{name}", summary="a deliberately wrong kernel",
                      requires=("torch",), cpu_mode="torch", space=space)
    impl = Impl(backend, algorithm, __name__, caps, entry=entry, options=options,
                summary=globals()[entry].__doc__.strip().splitlines()[0])
    return Control(name, impl, caught_by)


CONTROLS: list[Control] = [
    _control("noop", "noop", ("matches_reference", "every_element_written")),
    _control("skip-last-partial-page", "skip_last_partial_page",
             ("matches_reference", "paged_equals_dense")),
    _control("reads-past-length", "reads_past_length", ("matches_reference", "no_leak")),
    _control("wrong-gqa-mapping", "wrong_gqa_mapping", ("matches_reference", "gqa_equals_mha")),
    _control("first-length-for-all", "first_length_for_all",
             ("matches_reference", "batch_permutation")),
    _control("low-precision-accumulation", "low_precision_accumulation", ("matches_reference",)),
    _control("swapped-head-scales", "swapped_head_scales", ("matches_reference",)),
    _control("window-one-too-wide", "window_one_too_wide",
             ("matches_reference", "window_is_last_tokens"), caps=_MASKED),
    _control("softcap-before-scale", "softcap_before_scale", ("matches_reference",),
             caps=_MASKED),
    _control("causal-off-by-one", "causal_off_by_one", ("matches_reference", "query_tokens"),
             caps=_MASKED),
    _control("unweighted-split-combine", "unweighted_split_combine",
             ("matches_reference", "split_invariance"), algorithm="split-k",
             options=("num_splits",)),
    _control("plan-drops-last-chunk", "planned_split_dropping_last_chunk",
             ("matches_reference", "split_invariance"), algorithm="split-k",
             options=("num_splits",)),
    _control("tuned-tile-drops-tail", "tuned_tile_drops_tail", ("every_config_conforms",),
             options=("config",), space=Space(Knob("block_n", (32, 64)))),
    _control("memoised", "memoised", ("timed_calls_conform",)),
    _control("first-call-only", "first_call_only", ("timed_calls_conform",)),
    _control("copy-memoised", "copy_memoised", ("timed_calls_conform",)),
    _control("poison-gated", "poison_gated", ("timed_calls_conform",)),
]
if torch.cuda.is_available():  # graph mode exists only on a GPU
    CONTROLS.append(_control("capture-skipping", "capture_skipping", ("timed_calls_conform",)))
