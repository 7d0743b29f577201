"""Hypothesis strategies over the spec's axes, and ``fit`` to what one implementation supports.

Sizes come from the active profile (``conformance/conftest.py``): small on a 2-core CPU, where
kernels run in CPU interpreters and simulators, larger on a GPU. Lengths are biased towards page boundaries
(page_size - 1, page_size, page_size + 1 and multiples), where paging bugs live.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hypothesis import strategies as st

from impls.registry import Impl, ProblemLimit
from specs.problem import KV_DTYPES, KV_SCALES, MAX_Q_LEN, DecodeProblem

HEAD_DIMS = (64, 96, 128, 256)  # the spec's head dims: 96 is the non-power-of-two one
GROUP_SIZES = (1, 2, 3, 4, 7, 8, 16)  # MHA, GQA (7: Qwen2.5-7B), MQA-like
PAGE_SIZES = (1, 2, 3, 7, 8, 15, 16, 17, 32, 64, 128, 256)


@dataclass(frozen=True)
class Sizes:
    max_batch: int
    max_seq_len: int
    max_q_heads: int
    max_q_len: int  # query tokens a sequence (a draft's rows multiply an interpreter's work)


SIZES = {
    "ci": Sizes(max_batch=3, max_seq_len=160, max_q_heads=16, max_q_len=4),
    "gpu": Sizes(max_batch=8, max_seq_len=4096, max_q_heads=64, max_q_len=MAX_Q_LEN),
}
# A backend whose CPU mode is slower than these ci sizes allow declares a smaller limit
# (``Backend.cpu_limit``): fit() clamps lengths, batch and heads to it in the ci profile (GQA
# group, head_dim, page size and dtype are kept), and a limit's ``max_examples`` caps the drawn
# examples a property (conformance/conftest.py), so CI stays short. On a GPU nothing is clamped.


def profile_name() -> str:
    """``DECODE_BENCH_PROFILE`` (ci | gpu), else gpu when there is a CUDA GPU, else ci."""
    import torch

    default = "gpu" if torch.cuda.is_available() else "ci"
    name = os.environ.get("DECODE_BENCH_PROFILE", default)
    if name not in SIZES:
        raise ValueError(f"DECODE_BENCH_PROFILE={name!r}: must be one of {sorted(SIZES)}")
    return name


def sizes() -> Sizes:
    return SIZES[profile_name()]


def _lengths(page_size: int, max_len: int):
    near_page = st.builds(lambda m, d: m * page_size + d, st.integers(1, max(1, max_len // page_size)),
                          st.sampled_from((-1, 0, 1)))
    return st.one_of(st.integers(1, max_len), near_page).map(lambda n: min(max(n, 1), max_len))


@st.composite
def problems(draw, layout: str | None = None, min_group: int = 1, min_batch: int = 1) -> DecodeProblem:
    """A valid problem drawn from the spec's axes (``fit`` then adapts it to one impl)."""
    sz = sizes()
    layout = layout or draw(st.sampled_from(("dense", "paged")))
    dtype = draw(st.sampled_from(("bfloat16", "float16", "float32")))
    head_dim = draw(st.sampled_from(HEAD_DIMS))
    group = draw(st.sampled_from([g for g in GROUP_SIZES if min_group <= g <= sz.max_q_heads]))
    num_kv_heads = draw(st.integers(1, max(1, sz.max_q_heads // group)))
    page_size = draw(st.sampled_from(PAGE_SIZES))
    batch = draw(st.integers(min_batch, max(min_batch, sz.max_batch)))
    seq_lens = draw(st.lists(_lengths(page_size, sz.max_seq_len), min_size=batch, max_size=batch))
    # an fp8 cache beside a 16-bit query (fit drops it where the implementation reads none)
    kv_dtype = draw(st.sampled_from((None, *KV_DTYPES))) if dtype != "float32" else None
    kv_scale = draw(st.sampled_from(KV_SCALES))
    # a window shorter than some sequences (and one of a single token), and caps of the scores'
    # own size, where tanh bends (fit drops either where the implementation takes none)
    window = draw(st.one_of(st.none(), st.integers(1, max(seq_lens)), st.just(1)))
    softcap = draw(st.one_of(st.none(), st.floats(0.5, 30.0)))
    # plain decode half the time, else a draft of 2 tokens or more (no more than the shortest
    # sequence holds; fit drops it to what the implementation takes)
    q_len = min(draw(st.one_of(st.just(1), st.integers(2, sz.max_q_len))), min(seq_lens))
    return DecodeProblem(num_kv_heads * group, num_kv_heads, head_dim, tuple(seq_lens),
                         layout=layout, page_size=page_size, dtype=dtype, kv_dtype=kv_dtype,
                         kv_scale=kv_scale, window=window, softcap=softcap, q_len=q_len)


seeds = st.integers(0, 2**16)


def fit(problem: DecodeProblem, impl: Impl, layout: str | None = None) -> DecodeProblem:
    """``problem`` moved onto what ``impl`` declares it handles (``layout`` when given, else a
    layout it serves; dtype, head_dim, GQA group, page size, uniform lengths), so a pinned
    example is adapted rather than silently dropped."""
    if layout is None and problem.layout not in impl.layouts:
        layout = sorted(impl.layouts)[0]
    if layout is not None and layout != problem.layout:
        problem = problem.replace(layout=layout)
    caps = impl.caps.on(problem.layout)
    if problem.q_len > caps.max_q_len:
        problem = problem.replace(q_len=caps.max_q_len)
    if problem.window is not None and not caps.windows:
        problem = problem.replace(window=None)
    if problem.softcap is not None and not caps.softcaps:
        problem = problem.replace(softcap=None)
    if problem.cache.quantised and problem.kv_dtype not in caps.kv_dtypes:
        problem = problem.replace(kv_dtype=None)
    if problem.cache.quantised and problem.kv_scale not in caps.kv_scales:
        problem = problem.replace(kv_scale=sorted(caps.kv_scales)[0])

    def with_dtype(problem, dtype):  # a float32 query takes no fp8 cache
        return problem.replace(dtype=dtype, **({"kv_dtype": None} if dtype == "float32" else {}))

    if problem.dtype not in caps.dtypes:
        problem = with_dtype(problem, sorted(caps.dtypes)[0])
    if impl.availability() is None and impl.backend.mode_unsupported(problem):
        problem = with_dtype(problem, "float16" if "float16" in caps.dtypes else "float32")
    step = caps.head_dim_multiple
    head_dim = max(problem.head_dim, caps.min_head_dim)
    head_dim = min(-(-head_dim // step) * step, caps.max_head_dim // step * step)
    if caps.head_dims is not None and head_dim not in caps.head_dims:  # the next one up, or the largest
        head_dim = min((d for d in caps.head_dims if d >= head_dim), default=max(caps.head_dims))
    if head_dim != problem.head_dim:
        problem = problem.replace(head_dim=head_dim, sm_scale=None)
    if caps.max_group_size and problem.group_size > caps.max_group_size:
        problem = problem.replace(num_q_heads=problem.num_kv_heads * caps.max_group_size)
    if problem.page_size % caps.page_size_multiple:
        problem = problem.replace(page_size=caps.page_size_multiple)
    if caps.max_seq_len and problem.max_seq_len > caps.max_seq_len:
        problem = with_lens(problem, tuple(min(n, caps.max_seq_len) for n in problem.seq_lens))
    if caps.max_batch and problem.batch > caps.max_batch:
        problem = problem.replace(seq_lens=problem.seq_lens[:caps.max_batch])
    if caps.uniform_lengths_only and not problem.uniform:
        problem = problem.replace(seq_lens=(problem.max_seq_len,) * problem.batch)
    if limit := ci_limit(impl):
        problem = _clamp(problem, limit)
    assert impl.unsupported(problem) is None, (impl.name, problem, impl.unsupported(problem))
    return problem


def ci_limit(impl: Impl) -> ProblemLimit | None:
    """The limit ``impl``'s CPU mode declares (``Backend.cpu_limit``) where it applies: the ci
    profile, the implementation running in that CPU mode; else None."""
    limit = getattr(impl.backend, "cpu_limit", None)
    if limit and profile_name() == "ci" and impl.availability() is None and impl.backend.mode() != "gpu":
        return limit
    return None


def with_lens(problem: DecodeProblem, seq_lens: tuple[int, ...], **fields) -> DecodeProblem:
    """``problem`` with other lengths, its query tokens cut to the shortest where they exceed it."""
    return problem.replace(seq_lens=seq_lens, q_len=min(problem.q_len, min(seq_lens)), **fields)


def _clamp(problem: DecodeProblem, limit: ProblemLimit) -> DecodeProblem:
    lens = tuple(min(n, limit.max_seq_len) for n in problem.seq_lens[:limit.max_batch])
    kv_heads = min(problem.num_kv_heads, max(1, limit.max_q_heads // problem.group_size))
    if lens == problem.seq_lens and kv_heads == problem.num_kv_heads:
        return problem
    return with_lens(problem, lens, num_kv_heads=kv_heads,
                     num_q_heads=kv_heads * problem.group_size)
