"""Hypothesis strategies over the spec's axes, and ``fit`` to what one implementation supports.

Sizes come from the active profile (``conformance/conftest.py``): small on a 2-core CPU, where
Triton runs in its interpreter, larger on a GPU. Lengths are biased towards page boundaries
(page_size - 1, page_size, page_size + 1 and multiples), where paging bugs live.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hypothesis import strategies as st

from impls.registry import Impl
from specs.problem import DecodeProblem

HEAD_DIMS = (64, 96, 128, 256)  # the spec's head dims: 96 is the non-power-of-two one
GROUP_SIZES = (1, 2, 3, 4, 7, 8, 16)  # MHA, GQA (7: Qwen2.5-7B), MQA-like
PAGE_SIZES = (1, 2, 3, 7, 8, 15, 16, 17, 32, 64, 128, 256)


@dataclass(frozen=True)
class Sizes:
    max_batch: int
    max_seq_len: int
    max_q_heads: int


SIZES = {
    "ci": Sizes(max_batch=3, max_seq_len=160, max_q_heads=16),
    "gpu": Sizes(max_batch=8, max_seq_len=4096, max_q_heads=64),
}
# The Numba CUDA simulator runs every thread as a Python thread, about 50x slower than Triton's
# (numpy-vectorised) interpreter per element: in the ci profile, problems for backends in that
# mode are clamped further by fit() (lengths, batch, heads; GQA group, head_dim, page size and
# dtype are kept), so CI stays short. On a GPU nothing is clamped.
SIMULATOR_SIZES = Sizes(max_batch=3, max_seq_len=48, max_q_heads=4)  # GQA groups up to 16 kept


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
    return DecodeProblem(num_kv_heads * group, num_kv_heads, head_dim, tuple(seq_lens),
                         layout=layout, page_size=page_size, dtype=dtype)


seeds = st.integers(0, 2**16)


def fit(problem: DecodeProblem, impl: Impl) -> DecodeProblem:
    """``problem`` moved onto what ``impl`` declares it handles (layout, dtype, head_dim, page
    size, uniform lengths), so a pinned example is adapted rather than silently dropped."""
    caps = impl.caps
    if problem.layout not in caps.layouts:
        problem = problem.replace(layout=sorted(caps.layouts)[0])
    if problem.dtype not in caps.dtypes:
        problem = problem.replace(dtype=sorted(caps.dtypes)[0])
    step = caps.head_dim_multiple
    head_dim = min(-(-problem.head_dim // step) * step, caps.max_head_dim // step * step)
    if caps.head_dims is not None and head_dim not in caps.head_dims:  # the next one up, or the largest
        head_dim = min((d for d in caps.head_dims if d >= head_dim), default=max(caps.head_dims))
    if head_dim != problem.head_dim:
        problem = problem.replace(head_dim=head_dim, sm_scale=None)
    if problem.page_size % caps.page_size_multiple:
        problem = problem.replace(page_size=caps.page_size_multiple)
    if caps.uniform_lengths_only and not problem.uniform:
        problem = problem.replace(seq_lens=(problem.max_seq_len,) * problem.batch)
    if profile_name() == "ci" and impl.availability() is None and impl.backend.mode() == "simulator":
        problem = _clamp(problem, SIMULATOR_SIZES)
    assert impl.unsupported(problem) is None, (impl.name, problem, impl.unsupported(problem))
    return problem


def _clamp(problem: DecodeProblem, sz: Sizes) -> DecodeProblem:
    lens = tuple(min(n, sz.max_seq_len) for n in problem.seq_lens[:sz.max_batch])
    kv_heads = min(problem.num_kv_heads, max(1, sz.max_q_heads // problem.group_size))
    if lens == problem.seq_lens and kv_heads == problem.num_kv_heads:
        return problem
    return problem.replace(seq_lens=lens, num_kv_heads=kv_heads,
                           num_q_heads=kv_heads * problem.group_size)
